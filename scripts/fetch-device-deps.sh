#!/usr/bin/env bash
# Prepares .deps/root: Debian packages the GPU machine lacks, unpacked (not
# installed) so they travel with `run` (carry: [".deps"]) to a machine with
# no network. Run here, on the networked dev machine; idempotent.
#
#   headers:  libxxhash-dev (xxhash.h; the top-level CMake looks in
#             .deps/root/usr/include), libcli11-dev (kvcg-server's flags,
#             found through CMAKE_PREFIX_PATH=.deps/root/usr),
#             libcuckoo-dev (the CPU baseline benchmark)
#   programs: redis-server, redis-tools (server tests with real clients) and
#             the shared libraries they need that a stock image may miss
#             (scripts/gpu-check.sh puts .deps/root/usr/lib/x86_64-linux-gnu
#             on LD_LIBRARY_PATH and .deps/root/usr/bin on PATH).
#   tcl:      tcl8.6 + libtcl8.6 for Redis's own test harness
#             (scripts/redis-suite.py; gpu-check.sh's "redis" stage links
#             tclsh8.6 as tclsh and sets TCL_LIBRARY to the unpacked scripts).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(libxxhash-dev libcli11-dev libcuckoo-dev redis-server redis-tools liblzf1 libjemalloc2
          tcl8.6 libtcl8.6)

mkdir -p .deps/debs .deps/root
cd .deps/debs
missing=()
for p in "${PACKAGES[@]}"; do
  ls "${p}"_*.deb >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "fetch-device-deps: downloading ${missing[*]}"
  apt-get download "${missing[@]}" >/dev/null
fi
for deb in *.deb; do
  dpkg -x "$deb" ../root
done
cd ../..
test -f .deps/root/usr/include/xxhash.h
# Redis's own test units (issue 13) live beside the checkout, which the GPU
# machine does not get: a copy travels in .deps (gpu-check.sh's "redis" stage).
if [ -d ../shared/redis-tests ]; then
  rm -rf .deps/redis-tests && cp -r ../shared/redis-tests .deps/redis-tests
fi
echo "fetch-device-deps: $(ls .deps/debs | wc -l) packages in .deps/root ($(du -sh .deps | cut -f1))"
