# Two commands for a fresh Debian 12 machine (as root):
#   make run   install missing packages, build, run the quickstart job
#   make test  same set-up, then the whole test suite through ctest
PRESET ?= default
BUILD_DIR := $(if $(filter cpu,$(PRESET)),build-cpu,$(if $(filter asan,$(PRESET)),build-asan,build))
JOBS ?= $(shell nproc)

.PHONY: run test setup build
run: build
	$(BUILD_DIR)/apps/msomni-run/msomni-run configs/quickstart.toml --dry-run
	$(BUILD_DIR)/apps/msomni-run/msomni-run configs/quickstart.toml --fresh

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) --timeout 900

setup:
	tools/bootstrap.sh

build: setup
	cmake --preset $(PRESET)
	cmake --build --preset $(PRESET) -j $(JOBS)
