# hogwild — top-level entry points. See README.md.
BUILD ?= build
JOBS  ?= $(shell nproc)
CMAKE_FLAGS ?=
HOGWILD = $(BUILD)/hogwild

.PHONY: all deps configure build test test-asan demo fuzz bench format format-check clean

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

# The CPU tests under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/, no CUDA): the
# libraries and these test programs only (the CLI tests, which start the binary, and the slow
# golden and end-to-end suites stay in `make test`; so do the server tests, which start it too and
# carry the ctest label starts_binary).
# Run by .ci/run after `make test`.
ASAN_BUILD ?= build-asan
ASAN_TESTS ?= test_core test_stop_policy test_sampler test_generate test_model_config \
  test_safetensors test_model_load test_make_model test_quant test_quant_model test_cpu_ops \
  test_rope test_cpu_backend test_cpu_moe test_cpu_parallel \
  test_hogwild_layout test_hogwild_scheduler test_hogwild_session test_hogwild_device_sampling \
  test_hogwild_block_ops test_hogwild_run_outputs test_hogwild_live_view hogwild_protocol_test \
  test_hogwild_kv_budget test_hogwild_kv_summary test_server_http_parse tokenizer_test \
  test_chat_template
test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHOGWILD_CUDA=OFF \
	  -DHOGWILD_SANITIZE=ON -DHOGWILD_BENCH=OFF $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS) --target $(ASAN_TESTS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS) -E '_NOT_BUILT' -LE starts_binary

fuzz: deps
	scripts/fuzz.sh

demo: build
	scripts/demo.sh

bench: build
	@echo "see bench/README.md"

format: configure
	cmake --build $(BUILD) -t format

# Lists the C++ files clang-format would change (.clang-format); exit 1 when there are any.
format-check:
	scripts/check_format.sh

clean:
	rm -rf $(BUILD) build-fuzz $(ASAN_BUILD)
