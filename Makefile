# parity — front door. `make demo` and `make test` do all set-up on a fresh machine.
#   make deps   install missing Debian packages (scripts/install-deps.sh; idempotent)
#   make build  configure and build into build/ (Release), the Python extension, the venv, web assets
#   make test   build, then run every test (C++, Python, browser) through ctest
#   make demo   build the CLI and the Python extension only, then run the built-in example end to end
#   make bench  build, then run the benchmarks and write their figures
#   make sanitize  build with ASan+UBSan into build-asan/ and run the C++ tests and fuzz replays there
#   make fuzz   build the libFuzzer harnesses with clang into build-fuzz/, run each FUZZ_SECONDS (docs/fuzzing.md)
#   make fuzz-campaign  each harness until its coverage stops growing (at most FUZZ_MAX_SECONDS)
BUILD ?= build
JOBS  ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
FUZZ_SECONDS ?= 10
FUZZ_MAX_SECONDS ?= 1200
VENV := .venv
# The venv's python runs the Python and browser tests (scripts/make-venv.sh makes it)
VENV_PY := $(CURDIR)/$(VENV)/bin/python

.PHONY: all deps configure build test demo demo-build bench sanitize fuzz fuzz-build fuzz-campaign clean web

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DPARITY_TEST_PYTHON=$(VENV_PY) $(CMAKE_FLAGS)

configure: deps $(BUILD)/CMakeCache.txt

build: configure web
	cmake --build $(BUILD) -j $(JOBS)
	@bash scripts/make-venv.sh $(VENV) $(BUILD)
	@grep -qx 'PARITY_TEST_PYTHON:FILEPATH=$(VENV_PY)' $(BUILD)/CMakeCache.txt || cmake -S . -B $(BUILD) -DPARITY_TEST_PYTHON=$(VENV_PY) >/dev/null

web: deps
	@bash scripts/install-web.sh

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The demo needs the CLI and the Python extension (and what they link), not the tests and benchmarks.
DEMO_TARGETS := parity _parity_core

demo-build: configure web
	cmake --build $(BUILD) -j $(JOBS) --target $(DEMO_TARGETS)
	@bash scripts/make-venv.sh $(VENV) $(BUILD)

demo: demo-build
	@bash scripts/demo.sh $(BUILD)

bench: build
	@bash bench/run.sh $(BUILD)

# The C++ tests have numpy (the venv's python) write reference files, and the report's tests need the
# charting library (web): both are made here, so that a fresh clone can run it first.
sanitize: deps web
	@mkdir -p $(BUILD) && bash scripts/make-venv.sh $(VENV) $(BUILD)
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DPARITY_SANITIZE=ON -DPARITY_BUILD_PYTHON=OFF -DPARITY_BUILD_BENCH=OFF \
	  -DPARITY_TEST_PYTHON=$(VENV_PY)
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS) -R '^(cpp_|fuzz_replay_)'

fuzz-build: deps
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPARITY_FUZZ=ON \
	  -DPARITY_BUILD_PYTHON=OFF -DPARITY_BUILD_BENCH=OFF
	cmake --build build-fuzz --target fuzz_all -j $(JOBS)

# Harnesses run JOBS at a time, one core each.
fuzz: fuzz-build
	python3 fuzz/campaign.py build-fuzz --seconds $(FUZZ_SECONDS) --jobs $(JOBS)

# Each harness until its coverage stops growing (docs/fuzzing.md "Campaign"); resumes from build-fuzz's corpus.
fuzz-campaign: fuzz-build
	python3 fuzz/campaign.py build-fuzz --until-plateau --max-seconds $(FUZZ_MAX_SECONDS) --jobs $(JOBS)

clean:
	rm -rf $(BUILD) build-asan build-fuzz $(VENV)
