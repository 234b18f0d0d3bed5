# The two commands (see README.md):
#   make run   — install what is missing, build, start kvcg-server (GPU if present, CPU otherwise)
#   make test  — install what is missing, build, run every test (plus sanitizer builds)
#
# Build folders: build/ (release with debug info, CUDA when nvcc exists),
# build-asan/ and build-tsan/ (CPU code under sanitizers).

JOBS     ?= $(shell nproc)
CMAKE    ?= cmake
VENV_PY  := $(CURDIR)/.venv/bin/python
CMAKE_ARGS ?=
RUN_ARGS ?=
# Sanitizer builds cover the library and its tests; the programs, benchmarks
# and the fuzz run (ASan-instrumented itself) come from the main build only.
SANITIZER_BUILD := -DKVCG_BUILD_BENCH=OFF -DKVCG_BUILD_TOOLS=OFF -DKVCG_FUZZ=OFF

.PHONY: all deps build run test test-fast test-asan test-tsan bench-cpu clean

all: build

deps:
	@bash scripts/install-deps.sh

build/build.ninja: CMakeLists.txt
	$(CMAKE) -S . -B build -G Ninja -DKVCG_PYTHON=$(VENV_PY) $(CMAKE_ARGS)

build: deps build/build.ninja
	$(CMAKE) --build build -j $(JOBS)

run: build
	@if [ -x build/tools/server/kvcg-server ]; then \
	  exec build/tools/server/kvcg-server $(RUN_ARGS); \
	else \
	  exec build/tools/demo/kvcg-demo $(RUN_ARGS); \
	fi

# Everything: the main build's tests, then the CPU tests under ASan+UBSan and TSan.
test: test-fast test-asan test-tsan
	@echo "make test: all test stages passed"

test-fast: build
	bash scripts/run-ctest.sh build

build-asan/build.ninja: CMakeLists.txt
	$(CMAKE) -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DKVCG_WITH_CUDA=OFF \
	  $(SANITIZER_BUILD) -DKVCG_SANITIZE=address,undefined $(CMAKE_ARGS)

test-asan: deps build-asan/build.ninja
	$(CMAKE) --build build-asan -j $(JOBS)
	bash scripts/run-ctest.sh build-asan

build-tsan/build.ninja: CMakeLists.txt
	$(CMAKE) -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKVCG_WITH_CUDA=OFF \
	  $(SANITIZER_BUILD) -DKVCG_SANITIZE=thread $(CMAKE_ARGS)

test-tsan: deps build-tsan/build.ninja
	$(CMAKE) --build build-tsan -j $(JOBS)
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" bash scripts/run-ctest.sh build-tsan

bench-cpu: build
	bash bench/cpu/run.sh

clean:
	rm -rf build build-asan build-tsan
