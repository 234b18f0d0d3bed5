#!/usr/bin/env bash
# Installs what kvcg needs on a Debian/Ubuntu machine: the Debian packages
# (compilers, libraries, redis tools for the server tests, tcl for Redis's
# own test suite) and a Python venv (.venv) for the test clients and plot
# scripts. Idempotent and quick when
# everything is already there, so every make target can call it.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  cmake ninja-build g++ make pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  libxxhash-dev libcuckoo-dev libtbb-dev
  libfmt-dev libspdlog-dev libcli11-dev
  redis-server redis-tools tcl
  clang libclang-rt-14-dev
  python3-venv
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing Debian packages: ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The venv is rebuilt when requirements.txt changes.
if [ ! -x .venv/bin/python ] || ! cmp -s requirements.txt .venv/.requirements; then
  echo "install-deps: creating Python venv .venv"
  python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt
  cp requirements.txt .venv/.requirements
fi
