#!/usr/bin/env bash
# Installs the Debian 12 packages cntkio needs to build and test, only those that are missing.
# Idempotent and quiet when everything is present. Run as root (or with sudo available).
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  libfast-float-dev libcli11-dev nlohmann-json3-dev
  clang-format python3
  clang libclang-rt-14-dev
  openmpi-bin libopenmpi-dev
  libopencv-dev libzip-dev libboost-dev libturbojpeg0-dev zlib1g-dev
  python3-dev python3-numpy python3-scipy python3-torch python3-pybind11 pybind11-dev python3-pytest
  dpkg-dev doxygen
  python3-pandas python3-sklearn
  libcurl4-openssl-dev curl nginx-light nodejs
)
# The S3 test server (s3rver) comes from npm: Debian's npm package, unless the installed Node.js has its own
# (NodeSource's nodejs ships npm; Debian's npm would conflict with it).
if ! command -v npm >/dev/null 2>&1; then
  packages+=(npm)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
