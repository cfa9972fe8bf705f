#!/usr/bin/env python3
"""Runs the conformance runner's CTF and CBF cases with their data read from a server on 127.0.0.1 (issue
#24): nginx over HTTP, or s3rver over S3 (installed into tests/remote/node_modules from package-lock.json).
Fails unless every case run passes and at least one CTF and one CBF case ran.

Usage: conformance.py --server nginx|s3rver RUNNER CONFORMANCE_DIR
"""

import argparse
import os
import pathlib
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import servers  # noqa: E402


def run(runner, conformance_dir, url, env=None):
    result = subprocess.run([runner, "--data-url", url, conformance_dir], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)
    lines = result.stdout.splitlines()
    ran = [line for line in lines if line.startswith(("PASS ", "FAIL "))]
    for line in ran:
        print(line)
    print(lines[-1] if lines else "(no output)")
    failed = [line for line in ran if line.startswith("FAIL ")]
    kinds = {kind for kind in ("[ctf/", "[cbf/") if any(kind in line for line in ran if line.startswith("PASS "))}
    if result.returncode != 0 or failed or len(kinds) != 2:
        print("remote conformance over %s: FAILED (%d failed, kinds passed: %s)" % (url, len(failed), sorted(kinds)))
        return 1
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", choices=["nginx", "s3rver"], required=True)
    parser.add_argument("runner")
    parser.add_argument("conformance_dir")
    args = parser.parse_args()
    if args.server == "nginx":
        with servers.Nginx(args.conformance_dir) as nginx:
            return run(args.runner, args.conformance_dir, nginx.url)
    problem = servers.install_s3rver()
    if problem is not None:
        print("remote conformance over S3: s3rver cannot be installed: " + problem)
        return 1
    with servers.S3rver({"conformance": args.conformance_dir}) as s3:
        env = dict(os.environ, **s3.environment())
        return run(args.runner, args.conformance_dir, "s3://conformance", env)


if __name__ == "__main__":
    sys.exit(main())
