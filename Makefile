# Two commands for a fresh Debian 12 machine (as root):
#   make run   install missing packages, build the programs (no test), run the quickstart job
#   make test  same set-up, then the whole test suite through ctest
# and `make install` puts the programs on PATH (PREFIX, default /usr/local: PREFIX/bin).
PRESET ?= default
BUILD_DIR := $(if $(filter cpu,$(PRESET)),build-cpu,$(if $(filter asan,$(PRESET)),build-asan,build))
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local
# The programs msomni installs (msomni-run finds msomni-rank, msomni-gen-dataset and
# msomni-health-peer beside itself); no test target.
PROGRAMS := msomni-run msomni-rank msomni msomni-agent msomni-sched msomni-gen-dataset msomni-health-peer

.PHONY: run test setup build programs install asan-rank gpu-bundle
run: programs
	$(BUILD_DIR)/apps/msomni-run/msomni-run configs/quickstart.toml --dry-run
	$(BUILD_DIR)/apps/msomni-run/msomni-run configs/quickstart.toml --fresh

test: build asan-rank
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) --timeout 900

# The rank under AddressSanitizer and UBSan (Debug, CPU only), for the test that runs a rank's
# whole lifecycle under them; only the rank and what it links are built.
asan-rank: setup
	cmake --preset asan
	cmake --build --preset asan -j $(JOBS) --target msomni-rank

setup:
	tools/bootstrap.sh

build: setup
	cmake --preset $(PRESET)
	cmake --build --preset $(PRESET) -j $(JOBS)

programs: setup
	cmake --preset $(PRESET)
	cmake --build --preset $(PRESET) -j $(JOBS) --target $(PROGRAMS)

install: programs
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

# The self-contained archive a bare GPU machine runs the GPU check from (docs/gpu_check.md).
gpu-bundle: setup
	tools/gpu_bundle.sh --out msomni-gpu-bundle.tar.xz
