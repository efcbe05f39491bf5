// CPU backend speed on a random-weight model of Qwen3-0.6B's shape (preset "qwen3-0.6b"):
// prefill tok/s for one prompt in one forward, decode tok/s one token per forward, and the achieved
// memory bandwidth of decode = (weight bytes + KV bytes read per step) / step time, next to a
// measured host read bandwidth. Prints a table; writes JSON.
//
//   bench_cpu [OUT.json] [--prompt N (128)] [--decode N (32)] [--preset NAME (qwen3-0.6b)]
//
// Weights: make-model's random values, made in memory (model/make_model.h make_model_weights).
// fp32 weights: Qwen3-0.6B is ~0.6 G parameters = ~2.4 GB.
#include <cblas.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/read_bandwidth.h"
#include "core/error.h"
#include "core/io.h"
#include "core/json_text.h"
#include "cpu/cpu_backend.h"
#include "cpu/parallel.h"
#include "model/make_model.h"

namespace {

using namespace hogwild;
using clk = std::chrono::steady_clock;

double seconds_since(clk::time_point t) {
  return std::chrono::duration<double>(clk::now() - t).count();
}

int run(int argc, char** argv) {
  std::string out = "bench_cpu.json", preset = "qwen3-0.6b";
  int64_t n_prompt = 128, n_decode = 32;
  CLI::App app{
      "CPU backend speed: prefill and decode tok/s and the decode's memory bandwidth on a "
      "random-weight model of a preset's shape (table + JSON)"};
  app.option_defaults()->always_capture_default();
  app.add_option("out", out, "JSON file to write");
  app.add_option("--prompt", n_prompt, "prompt tokens of the prefill");
  app.add_option("--decode", n_decode, "decode steps (one token per forward)");
  app.add_option("--preset", preset, "model preset (hogwild make-model --preset)");
  CLI11_PARSE(app, argc, argv);
  if (n_prompt < 1 || n_decode < 1) fail("--prompt and --decode must be >= 1");
  ModelPreset p = find_preset(Arch::qwen3, preset);
  const ModelConfig cfg = p.config;

  auto t0 = clk::now();
  ModelWeights w = make_model_weights(p);
  const double init_s = seconds_since(t0);
  const double wbytes = static_cast<double>(cpu::weight_bytes_per_step(w));
  cpu::CpuBackend be(std::move(w));

  // Prompt ids: a fixed pseudo-random sequence.
  std::vector<int32_t> prompt(n_prompt);
  for (int64_t i = 0; i < n_prompt; ++i)
    prompt[i] = static_cast<int32_t>((i * 7919 + 13) % cfg.vocab_size);
  auto prefill = [&](BlockId b) {
    ForwardBatch fb;
    fb.views = {{b}};
    for (int64_t i = 0; i < n_prompt; ++i)
      fb.tokens.push_back({prompt[i], 0, b, i + 1 == n_prompt});
    std::vector<float> logits;
    const auto t = clk::now();
    be.forward(fb, logits);
    return seconds_since(t);
  };
  // Warm-up prefill (page faults, OpenBLAS buffers), then the measured one.
  BlockId warm = be.new_block();
  prefill(warm);
  be.free_block(warm);
  const BlockId blk = be.new_block();
  const double prefill_s = prefill(blk);

  std::vector<double> step_s;
  double kv_bytes_total = 0;
  const double kv_per_token =
      2.0 * cfg.num_hidden_layers * cfg.num_key_value_heads * cfg.head_dim * 4;
  int32_t tok = 1;
  for (int64_t i = 0; i < n_decode; ++i) {
    ForwardBatch fb;
    fb.views = {{blk}};
    fb.tokens = {{tok, 0, blk, true}};
    std::vector<float> logits;
    const auto t = clk::now();
    be.forward(fb, logits);
    step_s.push_back(seconds_since(t));
    kv_bytes_total += kv_per_token * be.block_len(blk);
    tok = static_cast<int32_t>((tok * 31 + 7) % cfg.vocab_size);
  }
  double decode_s = 0;
  for (double s : step_s) decode_s += s;
  // After decode: under the same machine load. Best of 4 + 4 reads of 512 MiB.
  const double read_gbs = bench::measure_read_bandwidth(size_t{512} << 20).best_gbs;
  const double prefill_tps = n_prompt / prefill_s, decode_tps = n_decode / decode_s;
  const double decode_gbs = (wbytes * n_decode + kv_bytes_total) / decode_s / 1e9;

  std::printf("bench_cpu: preset %s (%lld layers, hidden %lld, vocab %lld), fp32 weights %.2f GB\n",
              preset.c_str(), static_cast<long long>(cfg.num_hidden_layers),
              static_cast<long long>(cfg.hidden_size), static_cast<long long>(cfg.vocab_size),
              wbytes / 1e9);
  std::printf("threads: OpenBLAS %d, pool %d; weight init %.1f s\n", openblas_get_num_threads(),
              cpu::num_threads(), init_s);
  std::printf("| phase   | tokens | seconds | tok/s  | GB/s  | %% of host read %.1f GB/s |\n",
              read_gbs);
  std::printf("|---------|--------|---------|--------|-------|------------------------|\n");
  std::printf("| prefill | %6lld | %7.3f | %6.1f |       |                        |\n",
              static_cast<long long>(n_prompt), prefill_s, prefill_tps);
  std::printf("| decode  | %6lld | %7.3f | %6.2f | %5.2f | %21.0f%% |\n",
              static_cast<long long>(n_decode), decode_s, decode_tps, decode_gbs,
              100.0 * decode_gbs / read_gbs);

  nlohmann::json j = {
      {"bench", "bench_cpu"},
      {"preset", preset},
      {"config",
       {{"num_hidden_layers", cfg.num_hidden_layers},
        {"hidden_size", cfg.hidden_size},
        {"intermediate_size", cfg.intermediate_size},
        {"vocab_size", cfg.vocab_size},
        {"num_attention_heads", cfg.num_attention_heads},
        {"num_key_value_heads", cfg.num_key_value_heads},
        {"head_dim", cfg.head_dim}}},
      {"threads", {{"openblas", openblas_get_num_threads()}, {"pool", cpu::num_threads()}}},
      {"weight_bytes_per_decode_step", wbytes},
      {"host_read_gbs", read_gbs},
      {"prefill", {{"tokens", n_prompt}, {"seconds", prefill_s}, {"tok_per_s", prefill_tps}}},
      {"decode",
       {{"tokens", n_decode},
        {"context_start", n_prompt},
        {"seconds", decode_s},
        {"tok_per_s", decode_tps},
        {"gbs", decode_gbs},
        {"kv_bytes_read", kv_bytes_total},
        {"step_seconds", step_s}}},
  };
  OutputFile f(out, "bench_cpu");
  f.write(dump_json(j, 2) + "\n");
  f.close();
  std::printf("wrote %s\n", out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
