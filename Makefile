# Two commands for a fresh Debian 12 machine (as root):
#   make run   install missing packages, build, run the quickstart job
#   make test  same set-up, then the whole test suite through ctest
PRESET ?= default
BUILD_DIR := $(if $(filter cpu,$(PRESET)),build-cpu,$(if $(filter asan,$(PRESET)),build-asan,build))
JOBS ?= $(shell nproc)

.PHONY: run test setup build asan-rank gpu-bundle
run: build
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

# The self-contained archive a bare GPU machine runs the GPU check from (docs/gpu_check.md).
gpu-bundle: setup
	tools/gpu_bundle.sh --out msomni-gpu-bundle.tar.xz
