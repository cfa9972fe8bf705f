"""cntkio.__version__ is the project version: the one CMakeLists.txt declares and `cntkio --version` prints."""

import re
import subprocess

import cntkio
from conftest import REPO


def project_version():
    text = (REPO / "CMakeLists.txt").read_text()
    match = re.search(r"project\(\s*cntkio\s+VERSION\s+([0-9.]+)", text)
    assert match, "no project(cntkio VERSION ...) in CMakeLists.txt"
    return match.group(1)


def test_version_is_the_cmake_project_version():
    assert cntkio.__version__ == project_version()
    assert cntkio.__version__ == cntkio._core.__version__


def test_version_matches_the_cli(cli):
    out = subprocess.run([cli, "--version"], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "cntkio " + cntkio.__version__
