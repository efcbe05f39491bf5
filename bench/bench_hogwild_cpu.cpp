// Hogwild! decode speed on the CPU backend, on make-model's random weights of a preset's shape
// (model/make_model.h make_model_weights; Qwen3-0.6B by default). Prints tables; writes JSON.
//
//   bench_hogwild_cpu [OUT.json] [--preset NAME (qwen3-0.6b)] [--prompt N (256)]
//       [--rows 1,2,3,4,6,8,16] [--threads 2,1] [--steps N (4)] [--repeats N (5)]
//       [--session-workers 1,2,4,8] [--session-steps N (16)] [--step-len N (24)]
//
// 1. Host read bandwidth: reads of a 1 GiB buffer by all pool threads, plain and with prefetch
//    (src/bench/read_bandwidth.h), 4 + 4 at the start and 1 + 1 before every round of step timings;
//    best and median.
//    Pool cost: 2000 parallel_for calls of one 5 us item per thread, time over 5 us (min, median).
// 2. Decode step by row count: M workers over a shared --prompt history, combined-layout views
//    (worker w sees [history][the other workers' step blocks][its own]); one step = one
//    Backend::forward of M rows (one token each, all with logits). --repeats rounds; a round
//    runs --steps steps for every thread count x row count in a fresh set of step blocks, so
//    every row count sees the machine's load over the whole run. Per row count: min and median
//    step. ratio = step / step of the first --rows entry (1 row) at the same thread count (min to
//    min, median to median). tok/s aggregate = M / median step; per worker = 1 / median step.
//    GB/s = (weights + K/V of every visible token) / min step: what a step must read from memory
//    at least; % of the best bandwidth probe. runq_ms: time the process's threads waited for a
//    CPU during the fastest step (other programs on the machine). Stages of the fastest step from
//    CpuProfile (cpu/cpu_backend.h); other = norms, RoPE, K/V writes, planning.
// 3. End-to-end session (hogwild/session.h, combined layout, greedy, a scripted step end every
//    --step-len tokens so steps get promoted): tok/s from SessionResult::decode_seconds (sampling
//    and promotions included, prefill and finisher excluded). Skipped with --session-workers 0.
//
// The machine may be shared with other work: step figures are mins and medians over rounds; the
// load average at the start and the end is printed and saved.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "bench/read_bandwidth.h"
#include "core/error.h"
#include "core/io.h"
#include "core/json_text.h"
#include "cpu/cpu_backend.h"
#include "cpu/parallel.h"
#include "cpu/skinny.h"
#include "hogwild/session.h"
#include "model/make_model.h"

namespace {

using namespace hogwild;
using clk = std::chrono::steady_clock;

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

std::vector<int> parse_list(const std::string& s, const char* what) {
  std::vector<int> v;
  std::stringstream ss(s);
  for (std::string p; std::getline(ss, p, ',');) {
    const int x = std::atoi(p.c_str());
    if (x < 0 || (x == 0 && p != "0")) fail("{}: '{}' is not a count", what, p);
    v.push_back(x);
  }
  return v;
}

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

double seconds_since(clk::time_point t) {
  return std::chrono::duration<double>(clk::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Nanoseconds the threads of this process have waited for a CPU while runnable, summed over its
// threads (the second field of /proc/self/task/*/schedstat; 0 where the kernel does not keep it):
// the time other programs on the machine took from this one.
double runqueue_wait_s() {
  double ns = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream f(e.path() / "schedstat");
    double run = 0, wait = 0;
    if (f >> run >> wait) ns += wait;
  }
  return ns * 1e-9;
}

struct StepStats {
  int rows = 0, threads = 0;
  std::vector<double> times, waits;  // per step: wall seconds, run-queue wait seconds
  double min_s = 1e30, bytes = 0;    // fastest step and the bytes it read
  double min_wait_s = 0;             // run-queue wait during the fastest step
  cpu::CpuProfile split;             // stages of the fastest step
};

// n_steps decode steps of st.rows workers over the history block `hist` (see the header), in a
// fresh set of step blocks; adds to st.
void measure_steps(cpu::CpuBackend& be, BlockId hist, int64_t n_steps, double weight_bytes,
                   StepStats& st) {
  const ModelConfig& c = be.config();
  const double kv_per_token = 2.0 * 4 * c.num_hidden_layers * c.num_key_value_heads * c.head_dim;
  const int rows = st.rows;
  std::vector<BlockId> blk(rows);
  for (BlockId& b : blk) b = be.new_block();
  ForwardBatch fb;
  for (int w = 0; w < rows; ++w) {
    std::vector<BlockId> view = {hist};
    for (int o = 0; o < rows; ++o)
      if (o != w) view.push_back(blk[o]);
    view.push_back(blk[w]);
    fb.views.push_back(view);
  }
  std::vector<int32_t> tok(rows);
  for (int w = 0; w < rows; ++w) tok[w] = static_cast<int32_t>((1000 + 17 * w) % c.vocab_size);
  std::vector<float> logits;
  for (int64_t s = 0; s < n_steps; ++s) {
    fb.tokens.clear();
    for (int w = 0; w < rows; ++w) fb.tokens.push_back({tok[w], w, blk[w], true});
    cpu::CpuProfile prof;
    be.set_profile(&prof);
    const double wait0 = runqueue_wait_s();
    const auto t = clk::now();
    be.forward(fb, logits);
    const double sec = seconds_since(t);
    const double wait = runqueue_wait_s() - wait0;
    be.set_profile(nullptr);
    st.times.push_back(sec);
    st.waits.push_back(wait);
    if (sec < st.min_s) {
      st.min_s = sec;
      st.min_wait_s = wait;
      st.split = prof;
      st.bytes = weight_bytes + kv_per_token * (be.block_len(hist) + rows * (s + 1));
    }
    for (int w = 0; w < rows; ++w) {
      const float* l = logits.data() + w * c.vocab_size;
      tok[w] = static_cast<int32_t>(std::max_element(l, l + c.vocab_size) - l);
    }
  }
  for (BlockId b : blk) be.free_block(b);
}

Formatting bench_formatting(int64_t collab_every) {
  Formatting f = builtin_formatting("generic-math");
  f.collab_check.every = collab_every;
  f.finisher.max_tokens = 1;
  return f;
}

int run(int argc, char** argv) {
  std::string out = "bench_hogwild_cpu.json", preset = "qwen3-0.6b";
  std::string rows_arg = "1,2,3,4,6,8,16", threads_arg = "2,1", session_arg = "1,2,4,8";
  int64_t n_prompt = 256, n_steps = 4, repeats = 5, session_steps = 16, step_len = 24;
  CLI::App app{
      "Hogwild! decode speed on the CPU backend: read bandwidth, decode step time by row "
      "count and thread count, end-to-end session tok/s (tables + JSON)"};
  app.option_defaults()->always_capture_default();
  app.add_option("out", out, "JSON file to write");
  app.add_option("--preset", preset, "model preset (hogwild make-model --preset)");
  app.add_option("--prompt", n_prompt, "tokens of the shared history");
  app.add_option("--rows", rows_arg, "row counts (workers) of the decode steps, comma-separated");
  app.add_option("--threads", threads_arg, "thread counts, comma-separated");
  app.add_option("--steps", n_steps, "steps per round");
  app.add_option("--repeats", repeats, "rounds");
  app.add_option("--session-workers", session_arg,
                 "worker counts of the end-to-end sessions (0 = skip them)");
  app.add_option("--session-steps", session_steps, "serial steps of each session");
  app.add_option("--step-len", step_len, "a worker's step ends every N tokens (scripted)");
  CLI11_PARSE(app, argc, argv);
  if (n_prompt < 1 || n_steps < 1 || repeats < 1 || session_steps < 1 || step_len < 2)
    fail("--prompt, --steps, --repeats, --session-steps >= 1 and --step-len >= 2");
  const std::vector<int> row_counts = parse_list(rows_arg, "--rows");
  const std::vector<int> thread_counts = parse_list(threads_arg, "--threads");
  std::vector<int> session_workers = parse_list(session_arg, "--session-workers");
  session_workers.erase(std::remove(session_workers.begin(), session_workers.end(), 0),
                        session_workers.end());
  for (int r : row_counts)
    if (r < 1) fail("--rows: counts must be >= 1");
  for (int t : thread_counts)
    if (t < 1) fail("--threads: counts must be >= 1");

  const std::string load_start = load_average();
  ModelWeights base = make_model_weights(find_preset(Arch::qwen3, preset));
  ModelConfig& cfg = base.config;
  cfg.max_position_embeddings = std::max<int64_t>(cfg.max_position_embeddings, 1 << 16);
  const double wbytes = static_cast<double>(cpu::weight_bytes_per_step(base));
  std::printf(
      "bench_hogwild_cpu: preset %s (%.3f B parameters, fp32 weights %.2f GB), skinny "
      "kernel %s, pool %d threads, prompt %lld tokens; load average %s\n",
      preset.c_str(), cfg.num_parameters() / 1e9, wbytes / 1e9, cpu::skinny_isa(),
      cpu::num_threads(), (long long)n_prompt, load_start.c_str());

  // ---- 1. host read bandwidth (all pool threads), again before every round of step timings
  std::vector<bench::ReadBandwidth> probes = {bench::measure_read_bandwidth()};
  // Pool round trip: parallel_for of one 5 us item per thread (busy, as a projection's slice
  // would be): all threads must take part, so the time over 5 us is the pool's cost (waking the
  // other threads, handing out items, waiting for the last), 2000 times.
  std::vector<double> trips;
  for (int i = 0; i < 2000; ++i) {
    const auto t = clk::now();
    cpu::parallel_for(cpu::num_threads(), [](int64_t, int) {
      const auto t0 = clk::now();
      while (seconds_since(t0) < 5e-6) {
      }
    });
    trips.push_back(seconds_since(t) * 1e6 - 5.0);
  }
  const double trip_min_us = *std::min_element(trips.begin(), trips.end());
  const double trip_med_us = median(trips);

  // ---- 2. decode step by row count: rounds of (every thread count x every row count) so that
  // each row count sees the machine's load over the whole run
  nlohmann::json steps = nlohmann::json::array();
  const int default_threads = cpu::num_threads();
  std::vector<StepStats> stats;
  for (int threads : thread_counts)
    for (int rows : row_counts) {
      stats.emplace_back();
      stats.back().rows = rows;
      stats.back().threads = threads;
    }
  {
    cpu::CpuBackend be(base);
    const BlockId hist = be.new_block();
    ForwardBatch fb;
    fb.views = {{hist}};
    for (int64_t i = 0; i < n_prompt; ++i)
      fb.tokens.push_back({static_cast<int32_t>(32 + (i * 7919) % 90), 0, hist, false});
    std::vector<float> logits;
    be.forward(fb, logits);
    for (int64_t rep = 0; rep < repeats; ++rep) {
      cpu::set_num_threads(default_threads);
      probes.push_back(bench::measure_read_bandwidth(size_t{1} << 30, 1));
      for (StepStats& st : stats) {
        cpu::set_num_threads(st.threads);
        measure_steps(be, hist, n_steps, wbytes, st);
      }
    }
    cpu::set_num_threads(default_threads);
  }
  bench::ReadBandwidth bw;
  for (const bench::ReadBandwidth& b : probes) {
    bw.gbs.insert(bw.gbs.end(), b.gbs.begin(), b.gbs.end());
    bw.best_plain_gbs = std::max(bw.best_plain_gbs, b.best_plain_gbs);
    bw.best_prefetch_gbs = std::max(bw.best_prefetch_gbs, b.best_prefetch_gbs);
  }
  bw.best_gbs = *std::max_element(bw.gbs.begin(), bw.gbs.end());
  bw.median_gbs = median(bw.gbs);
  std::printf(
      "host read bandwidth (%d threads, 1 GiB; %zu probes, some between the rounds): best %.1f "
      "GB/s (plain read %.1f, with prefetch %.1f), median %.1f\n",
      default_threads, bw.gbs.size(), bw.best_gbs, bw.best_plain_gbs, bw.best_prefetch_gbs,
      bw.median_gbs);
  std::printf("pool cost of a parallel_for of %d items of 5 us: min %.1f us, median %.1f us\n",
              default_threads, trip_min_us, trip_med_us);
  std::printf("\n%4s %7s %8s %8s %6s %6s %9s %9s %6s %5s %7s | %s\n", "rows", "threads", "min_ms",
              "med_ms", "x_min", "x_med", "agg_tok/s", "wrk_tok/s", "GB/s", "%bw", "runq_ms",
              "fastest step (ms): qkv attn o_proj mlp lm_head other");
  for (const StepStats& st : stats) {
    const StepStats& base_st = *std::find_if(stats.begin(), stats.end(), [&](const StepStats& x) {
      return x.threads == st.threads && x.rows == row_counts.front();
    });
    const double med = median(st.times), base_med = median(base_st.times);
    const double gbs = st.bytes / st.min_s / 1e9;
    const cpu::CpuProfile& p = st.split;
    const double other = p.total - p.qkv - p.attention - p.o_proj - p.mlp - p.lm_head;
    std::printf(
        "%4d %7d %8.1f %8.1f %6.2f %6.2f %9.2f %9.2f %6.1f %4.0f%% %7.1f | %.1f %.1f %.1f "
        "%.1f %.1f %.1f\n",
        st.rows, st.threads, st.min_s * 1e3, med * 1e3, st.min_s / base_st.min_s, med / base_med,
        st.rows / med, 1.0 / med, gbs, 100.0 * gbs / bw.best_gbs, st.min_wait_s * 1e3, p.qkv * 1e3,
        p.attention * 1e3, p.o_proj * 1e3, p.mlp * 1e3, p.lm_head * 1e3, other * 1e3);
    steps.push_back({{"rows", st.rows},
                     {"threads", st.threads},
                     {"steps", st.times.size()},
                     {"step_ms_min", st.min_s * 1e3},
                     {"step_ms_median", med * 1e3},
                     {"ratio_min", st.min_s / base_st.min_s},
                     {"ratio_median", med / base_med},
                     {"tok_per_s", st.rows / med},
                     {"tok_per_s_per_worker", 1.0 / med},
                     {"bytes_per_step", st.bytes},
                     {"gbs", gbs},
                     {"pct_of_read_bandwidth", 100.0 * gbs / bw.best_gbs},
                     {"runqueue_wait_ms_fastest", st.min_wait_s * 1e3},
                     {"runqueue_wait_ms_median", median(st.waits) * 1e3},
                     {"fastest_step_ms",
                      {{"qkv", p.qkv * 1e3},
                       {"attention", p.attention * 1e3},
                       {"o_proj", p.o_proj * 1e3},
                       {"mlp", p.mlp * 1e3},
                       {"lm_head", p.lm_head * 1e3},
                       {"norms", p.norms * 1e3},
                       {"rope", p.rope * 1e3},
                       {"plan", p.plan * 1e3},
                       {"total", p.total * 1e3}}}});
  }
  std::fflush(stdout);

  // ---- 3. end-to-end sessions
  nlohmann::json sessions = nlohmann::json::array();
  if (!session_workers.empty())
    std::printf("\n%8s %12s %10s %10s %14s %16s %10s\n", "workers", "serial_steps", "tokens",
                "seconds", "agg_tok_per_s", "worker_tok_per_s", "promoted");
  BenchCodec codec(static_cast<int32_t>(cfg.vocab_size));
  Formatting fmt = bench_formatting(1024);
  std::vector<int32_t> prompt(n_prompt);
  for (int64_t i = 0; i < n_prompt; ++i) prompt[i] = static_cast<int32_t>(32 + (i * 7919) % 90);
  for (int n : session_workers) {
    cpu::CpuBackend sbe(base);
    GreedyWithSteps picker(n, step_len);
    SessionOptions opt;
    opt.n_workers = n;
    opt.budget = session_steps;
    opt.max_context = cfg.max_position_embeddings;
    Session s(sbe, codec, fmt, opt, picker);
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
    sessions.push_back({{"workers", n},
                        {"serial_steps", r.serial_steps},
                        {"tokens", tokens},
                        {"decode_seconds", r.decode_seconds},
                        {"decode_forward_seconds", r.decode_forward_seconds},
                        {"prefill_seconds", r.prefill_seconds},
                        {"tok_per_s", agg},
                        {"tok_per_s_per_worker", agg / n},
                        {"steps_promoted", count.promoted}});
  }

  const std::string load_end = load_average();
  std::printf("\nload average at the end: %s\n", load_end.c_str());
  nlohmann::json j = {{"bench", "bench_hogwild_cpu"},
                      {"preset", preset},
                      {"parameters", cfg.num_parameters()},
                      {"weight_bytes_per_step", wbytes},
                      {"skinny_isa", cpu::skinny_isa()},
                      {"pool_threads", default_threads},
                      {"prompt_tokens", n_prompt},
                      {"steps_per_repeat", n_steps},
                      {"repeats", repeats},
                      {"load_average_start", load_start},
                      {"load_average_end", load_end},
                      {"read_bandwidth_gbs",
                       {{"best", bw.best_gbs},
                        {"best_plain", bw.best_plain_gbs},
                        {"best_prefetch", bw.best_prefetch_gbs},
                        {"median", bw.median_gbs},
                        {"probes", bw.gbs.size()}}},
                      {"pool_cost_us", {{"min", trip_min_us}, {"median", trip_med_us}}},
                      {"decode_steps", steps},
                      {"sessions",
                       {{"layout", "combined"},
                        {"serial_steps", session_steps},
                        {"step_len", step_len},
                        {"rows", sessions}}}};
  OutputFile f(out, "bench_hogwild_cpu");
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
