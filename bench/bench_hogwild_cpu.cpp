// Hogwild! session speed on the CPU backend: aggregate and per-worker decode tok/s for 1, 2 and 4
// workers on the same random-weight model (one batched forward per serial step for all workers,
// combined layout, shared history). Prints a table; writes JSON.
//
//   bench_hogwild_cpu [OUT.json] [--preset NAME (qwen3-0.6b)] [--prompt N (256)]
//       [--steps N (32)] [--workers 1,2,4] [--step-len N (24)]
//
// The model is a make-model preset shape with weights filled in memory by a fast PRNG (values do
// not matter for speed). Tokens: greedy argmax of the real logits, except that every --step-len-th
// token of a worker is a scripted ".\n\n" so that steps end and get promoted into the history as
// in a real run. Time = SessionResult::decode_seconds: the serial steps after the prefill,
// sampling included, finisher excluded. tok/s aggregate = generated tokens / time; per worker =
// aggregate / workers.
#include <CLI/CLI.hpp>
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/io.h"
#include "core/json_text.h"
#include "cpu/cpu_backend.h"
#include "hogwild/session.h"
#include "model/make_model.h"

namespace {

using namespace hogwild;

constexpr int32_t kStepEnd = 256;  // ".\n\n" in the bench codec

// Bytes for ids < 256, ".\n\n" for 256, "<tN>" for the rest of the model's vocabulary.
class BenchCodec : public TextCodec {
 public:
  explicit BenchCodec(int32_t vocab) : vocab_(vocab) {}
  std::vector<int32_t> encode(std::string_view text) const override {
    return std::vector<int32_t>(text.begin(), text.end());
  }
  std::string token_bytes(int32_t id) const override {
    if (id >= 0 && id < 256) return std::string(1, static_cast<char>(id));
    if (id == kStepEnd) return ".\n\n";
    return "<t" + std::to_string(id) + ">";
  }
  int32_t vocab_size() const override { return vocab_; }
  std::vector<int32_t> eos_ids() const override { return {}; }

 private:
  int32_t vocab_;
};

class GreedyWithSteps : public TokenPicker {
 public:
  GreedyWithSteps(int n, int64_t step_len) : count_(n, 0), step_len_(step_len) {}
  int32_t pick(int w, std::vector<float>& l) override {
    if (++count_[w] % step_len_ == 0) return kStepEnd;
    return static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
  }

 private:
  std::vector<int64_t> count_;
  int64_t step_len_;
};

// Uniform [-a, a) values from a xorshift stream per tensor.
std::vector<float> random_tensor(size_t n, float a, uint64_t seed) {
  std::vector<float> v(n);
  const size_t chunk = 1 << 20;
#pragma omp parallel for schedule(static)
  for (size_t c = 0; c < (n + chunk - 1) / chunk; ++c) {
    uint64_t s = (seed + 1) * 0x9e3779b97f4a7c15ULL + c * 0xda942042e4dd58b5ULL + 1;
    for (size_t i = c * chunk; i < std::min(n, (c + 1) * chunk); ++i) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      v[i] = (static_cast<float>(s >> 40) * 0x1.0p-24f * 2.0f - 1.0f) * a;
    }
  }
  return v;
}

ModelWeights weights_for(const ModelConfig& c) {
  ModelWeights w;
  w.config = c;
  const size_t H = c.hidden_size, I = c.intermediate_size;
  const size_t qd = c.num_attention_heads * c.head_dim, kvd = c.num_key_value_heads * c.head_dim;
  const float a = 0.035f;
  uint64_t seed = 0;
  w.embed_tokens = random_tensor(c.vocab_size * H, a, seed++);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    LayerWeights L;
    L.input_layernorm.assign(H, 1.0f);
    L.post_attention_layernorm.assign(H, 1.0f);
    L.q_proj = random_tensor(qd * H, a, seed++);
    L.k_proj = random_tensor(kvd * H, a, seed++);
    L.v_proj = random_tensor(kvd * H, a, seed++);
    L.o_proj = random_tensor(H * qd, a, seed++);
    L.gate_proj = random_tensor(I * H, a, seed++);
    L.up_proj = random_tensor(I * H, a, seed++);
    L.down_proj = random_tensor(H * I, a, seed++);
    if (c.attention_bias)
      L.q_bias.assign(qd, 0.f), L.k_bias.assign(kvd, 0.f), L.v_bias.assign(kvd, 0.f);
    if (c.qk_norm) L.q_norm.assign(c.head_dim, 1.0f), L.k_norm.assign(c.head_dim, 1.0f);
    w.layers.push_back(std::move(L));
  }
  w.norm.assign(H, 1.0f);
  if (!c.tie_word_embeddings) w.lm_head = random_tensor(c.vocab_size * H, a, seed++);
  return w;
}

Formatting bench_formatting(int64_t collab_every) {
  Formatting f = builtin_formatting("generic-math");
  f.collab_check.every = collab_every;
  f.finisher.max_tokens = 1;
  return f;
}

int run(int argc, char** argv) {
  std::string out = "bench_hogwild_cpu.json", preset = "qwen3-0.6b", workers_arg = "1,2,4";
  int64_t n_prompt = 256, n_steps = 32, step_len = 24;
  CLI::App app{"Hogwild! session speed on the CPU backend: aggregate and per-worker decode tok/s "
               "for several worker counts (table + JSON)"};
  app.option_defaults()->always_capture_default();
  app.add_option("out", out, "JSON file to write");
  app.add_option("--preset", preset, "model preset (hogwild make-model --preset)");
  app.add_option("--prompt", n_prompt, "prompt tokens");
  app.add_option("--steps", n_steps, "serial steps timed");
  app.add_option("--step-len", step_len, "a worker's step ends every N tokens (scripted)");
  app.add_option("--workers", workers_arg, "worker counts, comma-separated");
  CLI11_PARSE(app, argc, argv);
  if (n_prompt < 1 || n_steps < 1 || step_len < 2)
    fail("--prompt, --steps >= 1 and --step-len >= 2");
  std::vector<int> workers;
  std::stringstream ws(workers_arg);
  for (std::string p; std::getline(ws, p, ',');) workers.push_back(std::stoi(p));

  ModelConfig cfg = find_preset(Arch::qwen3, preset).config;
  cfg.max_position_embeddings = std::max<int64_t>(cfg.max_position_embeddings, 1 << 16);
  std::printf(
      "bench_hogwild_cpu: preset %s (%.3f B parameters, fp32), %d OpenMP threads, prompt %lld "
      "tokens, %lld serial steps\n",
      preset.c_str(), cfg.num_parameters() / 1e9, omp_get_max_threads(), (long long)n_prompt,
      (long long)n_steps);
  ModelWeights base = weights_for(cfg);
  BenchCodec codec(static_cast<int32_t>(cfg.vocab_size));
  Formatting fmt = bench_formatting(1024);
  std::vector<int32_t> prompt(n_prompt);
  for (int64_t i = 0; i < n_prompt; ++i) prompt[i] = static_cast<int32_t>(32 + (i * 7919) % 90);

  nlohmann::json rows = nlohmann::json::array();
  std::printf("\n%8s %12s %10s %10s %14s %16s %10s\n", "workers", "serial_steps", "tokens",
              "seconds", "agg_tok_per_s", "worker_tok_per_s", "promoted");
  for (int n : workers) {
    cpu::CpuBackend be(base);
    GreedyWithSteps picker(n, step_len);
    SessionOptions opt;
    opt.n_workers = n;
    opt.budget = n_steps;
    opt.max_context = cfg.max_position_embeddings;
    Session s(be, codec, fmt, opt, picker);
    struct Count : SessionObserver {
      int64_t promoted = 0;
      void on_forward(const ForwardRecord& r) override { promoted += r.closed.size(); }
    } count;
    s.set_observer(&count);
    SessionResult r = s.run(prompt);
    int64_t tokens = 0;
    for (int64_t t : r.tokens_per_worker) tokens += t;
    const double agg = tokens / r.decode_seconds;
    std::printf("%8d %12lld %10lld %10.3f %14.2f %16.2f %10lld\n", n, (long long)r.serial_steps,
                (long long)tokens, r.decode_seconds, agg, agg / n, (long long)count.promoted);
    std::fflush(stdout);
    rows.push_back({{"workers", n},
                    {"serial_steps", r.serial_steps},
                    {"tokens", tokens},
                    {"decode_seconds", r.decode_seconds},
                    {"prefill_seconds", r.prefill_seconds},
                    {"tok_per_s", agg},
                    {"tok_per_s_per_worker", agg / n},
                    {"steps_promoted", count.promoted}});
  }
  nlohmann::json j = {{"bench", "bench_hogwild_cpu"},
                      {"preset", preset},
                      {"parameters", cfg.num_parameters()},
                      {"threads", omp_get_max_threads()},
                      {"prompt_tokens", n_prompt},
                      {"serial_steps", n_steps},
                      {"layout", "combined"},
                      {"rows", rows}};
  OutputFile f(out, "bench_hogwild_cpu");
  f.write(dump_json(j, 2) + "\n");
  f.close();
  std::printf("\nwrote %s\n", out.c_str());
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
