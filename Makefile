# hogwild — top-level entry points. See README.md.
BUILD ?= build
JOBS  ?= $(shell nproc)
CMAKE_FLAGS ?=
HOGWILD = $(BUILD)/hogwild

.PHONY: all deps configure build test demo fuzz bench format clean

all: build

deps:
	@scripts/setup.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

configure: $(BUILD)/build.ninja

build: deps configure
	cmake --build $(BUILD) -j $(JOBS)

# Every test through ctest, then each libFuzzer target for ~30 s.
test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	$(MAKE) --no-print-directory fuzz

fuzz: deps
	scripts/fuzz.sh

demo: build
	scripts/demo.sh

bench: build
	@echo "see bench/README.md"

format: configure
	cmake --build $(BUILD) -t format

clean:
	rm -rf $(BUILD) build-fuzz
