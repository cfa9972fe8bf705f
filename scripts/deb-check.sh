#!/usr/bin/env bash
# Builds the Debian package cntkio_<version>_amd64.deb with CPack from a build tree, installs it with
# `dpkg -i` on this machine, checks that the installed `cntkio --version`, Python module and pkg-config file
# report the package's version and that an outside program builds against it with find_package(cntkio),
# then removes the package again (`dpkg -P cntkio`, a purge). Needs root (dpkg) and dpkg-dev
# (dpkg-shlibdeps, which computes the package's Depends); scripts/setup.sh installs it.
#
# Time: about 15 s on top of a built tree (cpack ~5 s, dpkg -i/-r ~5 s, the outside program ~5 s); building
# the tree first, if it is not built, is what takes long.
#
# Usage: scripts/deb-check.sh [BUILD_DIR]   (default: build, configured if missing). The .deb stays in
# BUILD_DIR. Refuses to run when a cntkio package is already installed, so it never removes one it did not
# install.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${1:-build}

if dpkg-query -W -f='${Status}' cntkio 2>/dev/null | grep -q "install ok installed"; then
  echo "deb-check: a cntkio package is already installed; remove it first (dpkg -P cntkio)" >&2
  exit 1
fi
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build "$build" -j "$(nproc)" --target cntkio_cli cntkio cntkio_shared \
  $(grep -q '^CNTKIO_BUILD_PYTHON:BOOL=ON' "$build/CMakeCache.txt" && echo cntkio_python || true)

version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
arch=$(dpkg --print-architecture)
deb="$build/cntkio_${version}_${arch}.deb"
rm -f "$deb"
(cd "$build" && cpack -G DEB >/dev/null)
[ -f "$deb" ] || { echo "deb-check: cpack did not write $deb" >&2; exit 1; }

echo "== $deb"
dpkg-deb -f "$deb" Package Version Architecture Depends Recommends
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || { echo "deb-check: package version differs" >&2; exit 1; }
dpkg-deb -f "$deb" Depends | grep -q "libopencv-core" ||
  { echo "deb-check: Depends lacks the OpenCV runtime (dpkg-shlibdeps missing?)" >&2; exit 1; }

work=$(mktemp -d)
cleanup() {
  dpkg -P cntkio >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
dpkg -i "$deb" >/dev/null

echo "== installed files run"
out=$(cd "$work" && env -u LD_LIBRARY_PATH -u PYTHONPATH /usr/bin/cntkio --version)
echo "$out"
[ "$out" = "cntkio $version" ] || { echo "deb-check: expected 'cntkio $version'" >&2; exit 1; }
if dpkg -L cntkio | grep -q "/dist-packages/cntkio/__init__.py"; then
  # PYTHONPATH puts the packaged folder first: a cntkio installed under /usr/local would shadow it otherwise.
  shadow=$(cd "$work" && env -u PYTHONPATH /usr/bin/python3 -c "import cntkio; print(cntkio.__file__)" 2>/dev/null || true)
  case "$shadow" in
    /usr/lib/python3/dist-packages/*) ;;
    *) echo "deb-check: note: 'import cntkio' finds $shadow before the packaged module" ;;
  esac
  out=$(cd "$work" && PYTHONPATH=/usr/lib/python3/dist-packages /usr/bin/python3 -c \
    "import cntkio; print(cntkio.__version__, cntkio.__file__)")
  echo "python: $out"
  [ "${out%% *}" = "$version" ] || { echo "deb-check: Python reports another version" >&2; exit 1; }
  case "$out" in */usr/lib/python3/dist-packages/*) ;; *) echo "deb-check: not the packaged module" >&2; exit 1 ;; esac
fi
out=$(env -u PKG_CONFIG_PATH pkg-config --modversion cntkio)
echo "pkg-config: $out"
[ "$out" = "$version" ] || { echo "deb-check: pkg-config reports another version" >&2; exit 1; }

echo "== examples/cpp against the package (find_package from /usr, no prefix path)"
cmake -S examples/cpp -B "$work/example" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/example" >/dev/null
"$work/example/read_ctf" "$root/examples/sequences.ctf" | tail -3

dpkg -P cntkio >/dev/null
[ ! -e /usr/bin/cntkio ] || { echo "deb-check: dpkg -P left /usr/bin/cntkio" >&2; exit 1; }
echo "deb-check: OK (installed, ran, purged)"
