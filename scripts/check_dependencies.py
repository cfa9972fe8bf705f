#!/usr/bin/env python3
"""Checks the dependency rule of HACKING.md over the #include lines of src/: each part may include only the
parts below it.

    core  <  config  <  spec  <  pipeline
                             <  formats/<one format>  <  convert

- core: nothing else of src/;
- config: core;
- spec (the registry, ReaderSpec, plugin loading): core, config;
- pipeline: core, config, spec; never a format (src/formats/ or a format's public header);
- formats/X: core, config, spec and its own folder; never another format's folder, the pipeline or convert;
- convert (converters between formats): everything but the pipeline;
- remote (the http/https/s3 Env over libcurl): core only; nothing includes it (core's default Env calls its
  registration function, declared where it is called, only in builds with CNTKIO_WITH_REMOTE).
Public headers count as the part they belong to: include/cntkio/{ctf,cbf,htk,image,convert}.hpp are formats,
the others are the core API every part may use.

Usage: scripts/check_dependencies.py [ROOT]   (ROOT: the repository, default: this script's parent folder)
Exits 1 and lists every violation (file:line: the include, and why) when there is one.
"""

import pathlib
import re
import sys

FORMAT_HEADERS = {"ctf.hpp": "ctf", "cbf.hpp": "cbf", "htk.hpp": "htk", "image.hpp": "image"}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')

# What each part may include, besides the public API headers that are not formats.
ALLOWED = {
    "core": {"core"},
    "config": {"core", "config"},
    "spec": {"core", "config", "spec"},
    "pipeline": {"core", "config", "spec", "pipeline"},
    "convert": {"core", "config", "spec", "formats", "convert"},
    "remote": {"core", "remote"},
}


def part_of_source(path):
    """The part of a file under src/: ('formats', 'ctf'), ('pipeline', None), ..."""
    parts = path.parts
    if parts[0] == "formats" and len(parts) > 1:
        return "formats", parts[1]
    return parts[0], None


def part_of_include(target):
    """The part an include names: ('formats', 'ctf') for "formats/ctf/x.hpp" or "cntkio/ctf.hpp"."""
    if target.startswith("cntkio/"):
        name = target[len("cntkio/"):]
        if name in FORMAT_HEADERS:
            return "formats", FORMAT_HEADERS[name]
        if name == "convert.hpp":
            return "convert", None
        return "api", None
    first = target.split("/")[0]
    if first == "formats":
        segments = target.split("/")
        return "formats", segments[1] if len(segments) > 2 else None
    if first in ALLOWED or first == "formats":
        return first, None
    return "other", None  # same-folder or third-party headers


def violations(root):
    found = []
    src = root / "src"
    for file in sorted(src.rglob("*")):
        if file.suffix not in (".cpp", ".hpp", ".h", ".cc"):
            continue
        part, fmt = part_of_source(file.relative_to(src))
        for number, line in enumerate(file.read_text(errors="replace").splitlines(), 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            target = match.group(1)
            kind, target_format = part_of_include(target)
            if kind in ("api", "other"):
                continue
            where = "%s:%d: #include \"%s\"" % (file.relative_to(root), number, target)
            if part == "formats":
                if kind == "formats" and target_format not in (fmt, None):
                    found.append(where + " (a format includes another format)")
                elif kind in ("pipeline", "convert"):
                    found.append(where + " (a format includes the %s)" % kind)
                continue
            allowed = ALLOWED.get(part)
            if allowed is None:
                continue
            if kind not in allowed:
                found.append(where + " (%s may include only %s)" % (part, ", ".join(sorted(allowed))))
    return found


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    found = violations(root)
    for v in found:
        print(v)
    if found:
        print("check_dependencies: %d include(s) break the dependency rule of HACKING.md" % len(found))
        return 1
    print("check_dependencies: the includes of %s/src follow the dependency rule" % root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
