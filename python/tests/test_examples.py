"""Runs the examples that the documentation quotes, so that it cannot drift from what the code does:
examples/cli_recipes.sh (the cntkio CLI), examples/quickstart.py, and the Python blocks of docs/guide.md and
docs/migration-from-cntk-io.md."""

import importlib.util
import os
import subprocess
import sys

import pytest

from conftest import REPO, build_dir


def _cli_or_skip():
    path = build_dir() / "cntkio"
    if not path.exists():
        pytest.skip("no cntkio CLI in the build tree %s (set CNTKIO_BUILD_DIR)" % build_dir())
    return path


def test_cli_recipes_run():
    cli = _cli_or_skip()
    env = dict(os.environ, CNTKIO=str(cli))
    result = subprocess.run(["bash", str(REPO / "examples" / "cli_recipes.sh")], env=env, cwd=str(REPO),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, "cli_recipes.sh failed:\n%s\n%s" % (result.stdout, result.stderr)
    assert "cli_recipes.sh: all recipes ran" in result.stdout
    assert "round trip: all 1644 dumped samples are identical" in result.stdout


def test_quickstart_runs_from_any_directory(tmp_path):
    # The test process imports the build's module through PYTHONPATH; the example inherits it.
    result = subprocess.run([sys.executable, str(REPO / "examples" / "quickstart.py")], cwd=str(tmp_path),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, "quickstart.py failed:\n%s\n%s" % (result.stdout, result.stderr)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("streams: [StreamInformation(name='features'")
    assert "minibatch 0: features (58, 8, 3), labels (58, 20), 255 samples" in lines[1]
    assert "read 6 minibatches: 300 sequences, 1344 samples" in result.stdout


def _python_blocks(page):
    """The ```python blocks of a docs page that are meant to run (not the cntk.io 'before' lines)."""
    text = (REPO / "docs" / page).read_text()
    blocks = []
    for block in text.split("```python\n")[1:]:
        code = block.split("```", 1)[0]
        if "import cntk.io" in code:
            continue
        if "import cntkio" not in code:  # a fragment continuing the page's `import cntkio as io`
            code = "import cntkio as io\n" + code
        blocks.append(code)
    return blocks


@pytest.mark.parametrize("page", ["guide.md", "migration-from-cntk-io.md"])
def test_python_snippets_of_the_docs_run(page, tmp_path):
    blocks = _python_blocks(page)
    assert blocks, "no python blocks found in docs/%s" % page
    for i, code in enumerate(blocks):
        if "cntkio.torch" in code and importlib.util.find_spec("torch") is None:
            continue  # PyTorch is optional
        script = tmp_path / ("snippet%d.py" % i)
        script.write_text(code)
        # The snippets name files relative to the repository root, as the guide's commands do.
        result = subprocess.run([sys.executable, str(script)], cwd=str(REPO), capture_output=True, text=True,
                                timeout=300)
        assert result.returncode == 0, "docs/%s, python block %d failed:\n%s\n%s" % (page, i + 1, code,
                                                                                  result.stderr)
