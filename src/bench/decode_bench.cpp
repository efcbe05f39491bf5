// `hogwild bench`: the backend-neutral sweep and table (decode_bench.h).
#include "bench/decode_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/request_fields.h"
#include "hogwild/kv_budget.h"
#include "hogwild/layout.h"

namespace hogwild::bench {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// The blocks and the batch of one (context, workers, sessions) point.
struct PointBlocks {
  std::vector<BlockId> owned;  // every block made for the point, freed by the caller
  std::vector<BlockId> step;   // (sessions * workers) the workers' current step blocks
  ForwardBatch batch;          // views filled; tokens are set per step
};

// Fills the backend's blocks of one point: per session a shared context block of ctx tokens and
// W step blocks of opt.step_tokens, plus the constant text blocks when opt.session_layout, and
// the combined-layout views over them. Throws what the backend's new_block/fill_block throw.
PointBlocks make_point_blocks(const DecodeBenchModel& m, int64_t ctx, int W, int S,
                              const DecodeBenchOptions& opt) {
  Backend& be = *m.backend;
  PointBlocks p;
  auto block = [&](int64_t len, uint64_t seed) {
    p.owned.push_back(be.new_block());
    m.fill_block(p.owned.back(), len, seed);
    return p.owned.back();
  };
  p.step.resize(static_cast<size_t>(S) * W);
  for (int s = 0; s < S; ++s) {
    const uint64_t seed = opt.seed + 1000 * static_cast<uint64_t>(s);
    const BlockId shared = block(ctx, seed + 1);
    for (int w = 0; w < W; ++w) p.step[s * W + w] = block(opt.step_tokens, seed + 100 + w);
    // The combined layout of hogwild/layout.h, as a session builds it. Session layout: the
    // constant blocks too, header 8 tokens, separator 2, separator + own header 10 (Qwen3 tokens
    // of the default formatting are of that order); else only the context and the steps.
    LayoutState st;
    st.layout = Layout::combined;
    st.history = shared;
    st.current.assign(p.step.begin() + s * W, p.step.begin() + (s + 1) * W);
    st.text.others_header.assign(W, -1);
    st.text.sep_own_header.assign(W, -1);
    if (opt.session_layout && W > 1) {
      st.text.others_header.assign(W, block(8, seed + 2));
      st.text.sep = block(2, seed + 3);
      for (int w = 0; w < W; ++w) st.text.sep_own_header[w] = block(10, seed + 200 + w);
    }
    for (std::vector<BlockId>& v : build_views(st)) p.batch.views.push_back(std::move(v));
  }
  return p;
}

// Tokens of the constant blocks the views read (each distinct block once): every block in a
// view that is not a step block.
int64_t constant_tokens(Backend& be, const PointBlocks& p) {
  int64_t const_tokens = 0;
  std::vector<BlockId> seen;
  for (const auto& v : p.batch.views)
    for (BlockId x : v)
      if (std::find(seen.begin(), seen.end(), x) == seen.end()) {
        seen.push_back(x);
        if (std::find(p.step.begin(), p.step.end(), x) == p.step.end())
          const_tokens += be.block_len(x);
      }
  return const_tokens;
}

// What the timed steps of one point measured.
struct StepTimes {
  std::vector<double> ms;      // (repeat) wall time of each timed step, milliseconds
  int64_t kv_tokens_read = 0;  // KV tokens a step must read, summed over the timed steps
  double weight_bytes = 0;     // MoE (last_step_reads): mean bytes of weights read per step
  double experts_touched = 0;  // MoE: mean experts touched per step
};

// Runs opt.warmup + opt.repeat decode steps of one token per row (ids spread over the
// vocabulary) on the point's batch and times the last opt.repeat of them.
StepTimes time_steps(const DecodeBenchModel& m, PointBlocks& p, const DecodeBenchOptions& opt) {
  const int64_t steps_total = opt.warmup + opt.repeat;
  const int64_t const_tokens = constant_tokens(*m.backend, p);
  const int rows = static_cast<int>(p.step.size());
  const int64_t vocab = m.backend->config().vocab_size;
  ForwardBatch& b = p.batch;
  StepTimes st;
  for (int64_t t = 0; t < steps_total; ++t) {
    b.tokens.clear();
    for (int r = 0; r < rows; ++r)
      b.tokens.push_back({static_cast<int32_t>((t * 131 + r * 17) % vocab), r, p.step[r], true});
    const auto t0 = std::chrono::steady_clock::now();
    m.step(b);
    const auto t1 = std::chrono::steady_clock::now();
    if (t >= opt.warmup) {
      st.ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      // every distinct block once: the contexts and constants, and the steps as they grow
      st.kv_tokens_read += const_tokens + rows * (opt.step_tokens + t + 1);
      if (m.last_step_reads) {
        const auto [bytes, touched] = m.last_step_reads();
        st.weight_bytes += bytes / opt.repeat;
        st.experts_touched += touched / opt.repeat;
      }
    }
  }
  return st;
}

// One (context, workers, sessions) point (decode_bench.h).
nlohmann::json bench_point(const DecodeBenchModel& m, int64_t ctx, int W, int S,
                           const DecodeBenchOptions& opt) {
  Backend& be = *m.backend;
  const int64_t steps_total = opt.warmup + opt.repeat;
  if (m.require_kv_tokens)
    m.require_kv_tokens(S * run_kv_tokens({ctx, W, opt.step_tokens + steps_total, 0, 0}));
  PointBlocks p = make_point_blocks(m, ctx, W, S, opt);
  StepTimes st = time_steps(m, p, opt);
  for (BlockId x : p.owned) be.free_block(x);

  const int rows = S * W;
  const double step_ms = median(st.ms);
  const double kv_bytes = double(st.kv_tokens_read) / opt.repeat * m.kv_bytes_per_token;
  const double weight_bytes = m.last_step_reads ? st.weight_bytes : m.weight_bytes;
  nlohmann::json r;
  r["model"] = m.name;
  r["context"] = ctx;
  r["workers"] = W;
  r["sessions"] = S;
  r["rows"] = rows;
  r["layout"] = opt.session_layout ? "session" : "bench";
  r["step_ms"] = step_ms;
  r["step_ms_min"] = *std::min_element(st.ms.begin(), st.ms.end());
  r["tok_s_per_worker"] = 1000.0 / step_ms;
  r["tok_s_aggregate"] = rows * 1000.0 / step_ms;
  r["weight_bytes"] = weight_bytes;
  if (m.last_step_reads) r["experts_touched"] = st.experts_touched;
  r["kv_bytes"] = kv_bytes;
  // What a step must read at least: the weights once and every visible KV block once.
  r["GBps"] = (weight_bytes + kv_bytes) / (step_ms * 1e-3) / 1e9;
  return r;
}

}  // namespace

void check_decode_bench_options(const DecodeBenchOptions& o) {
  if (o.workers.empty()) fail("-w: give at least one worker count");
  if (o.contexts.empty()) fail("-c: give at least one context length");
  if (o.sessions.empty()) fail("--sessions: give at least one session count");
  for (int w : o.workers) check_field(RequestField::workers, w);  // a session's range, 1..64
  for (int64_t c : o.contexts)
    if (c < 0) fail("-c {}: context lengths must be >= 0 tokens", c);
  for (int n : o.sessions)
    if (n < 1) fail("--sessions {}: session counts must be >= 1", n);
  if (o.repeat < 1) fail("-r {}: give at least 1 timed step", o.repeat);
  if (o.warmup < 0) fail("warmup {}: must be >= 0 steps", o.warmup);
  if (o.step_tokens < 0) fail("step tokens {}: must be >= 0", o.step_tokens);
}

void run_decode_sweep(const DecodeBenchModel& m, const DecodeBenchOptions& opt,
                      double bandwidth_gbs, nlohmann::json& out) {
  check_decode_bench_options(opt);
  if (!out.contains("results")) out["results"] = nlohmann::json::array();
  for (int S : opt.sessions)
    for (int64_t ctx : opt.contexts) {
      double base = 0;
      for (int W : opt.workers) {
        nlohmann::json r = bench_point(m, ctx, W, S, opt);
        if (W == 1) base = r["tok_s_aggregate"].get<double>();
        r["pct_of_bw"] = 100.0 * r["GBps"].get<double>() / bandwidth_gbs;
        r["speedup_vs_1_worker"] = base > 0 ? r["tok_s_aggregate"].get<double>() / base : 0.0;
        if (opt.progress)
          std::fprintf(stderr,
                       "bench %s ctx %ld workers %d sessions %d: %.2f ms/step, %.1f tok/s\n",
                       m.name.c_str(), static_cast<long>(ctx), W, S, r["step_ms"].get<double>(),
                       r["tok_s_aggregate"].get<double>());
        out["results"].push_back(r);
      }
    }
}

nlohmann::json measure_batch_invariance(Backend& be, int sessions, int64_t prompt_len, int steps,
                                        uint64_t seed) {
  if (sessions < 1 || prompt_len < 1 || steps < 1)
    fail("batch invariance: sessions ({}), prompt length ({}) and steps ({}) must be >= 1",
         sessions, prompt_len, steps);
  const int64_t vocab = be.config().vocab_size;
  std::vector<std::vector<int32_t>> prompts(sessions);
  uint64_t z = seed * 0x9e3779b97f4a7c15ull + 1;
  for (auto& p : prompts)
    for (int64_t i = 0; i < prompt_len; ++i) {
      z = z * 6364136223846793005ull + 1442695040888963407ull;
      p.push_back(static_cast<int32_t>((z >> 33) % static_cast<uint64_t>(vocab)));
    }
  auto argmax = [&](const float* row) {
    return static_cast<int32_t>(std::max_element(row, row + vocab) - row);  // first of ties
  };
  // Sequence 0's prefill logits and decoded tokens with the first n sessions in every forward.
  auto run = [&](int n, std::vector<float>& prefill_logits) {
    std::vector<BlockId> blocks;
    for (int s = 0; s < n; ++s) blocks.push_back(be.new_block());
    ForwardBatch b;
    for (int s = 0; s < n; ++s) {
      b.views.push_back({blocks[s]});
      for (int64_t i = 0; i < prompt_len; ++i)
        b.tokens.push_back({prompts[s][i], s, blocks[s], i + 1 == prompt_len});
    }
    std::vector<float> logits;
    std::vector<int32_t> out;
    try {
      be.forward(b, logits);  // one logits row per session, in batch order
      prefill_logits.assign(logits.begin(), logits.begin() + vocab);
      std::vector<int32_t> next(n);
      for (int s = 0; s < n; ++s) next[s] = argmax(logits.data() + s * vocab);
      for (int step = 0; step < steps; ++step) {
        out.push_back(next[0]);
        if (step + 1 == steps) break;
        b.tokens.clear();
        for (int s = 0; s < n; ++s) b.tokens.push_back({next[s], s, blocks[s], true});
        be.forward(b, logits);
        for (int s = 0; s < n; ++s) next[s] = argmax(logits.data() + s * vocab);
      }
    } catch (...) {
      for (BlockId id : blocks) be.free_block(id);
      throw;
    }
    for (BlockId id : blocks) be.free_block(id);
    return out;
  };
  std::vector<float> alone_logits, shared_logits;
  const std::vector<int32_t> alone = run(1, alone_logits);
  const std::vector<int32_t> shared = run(sessions, shared_logits);
  int identical = 0, prefix = -1;
  for (int i = 0; i < steps; ++i) {
    identical += alone[i] == shared[i];
    if (prefix < 0 && alone[i] != shared[i]) prefix = i;
  }
  double diff = 0, mag = 0;
  for (int64_t v = 0; v < vocab; ++v) {
    diff = std::max(diff, static_cast<double>(std::abs(alone_logits[v] - shared_logits[v])));
    mag = std::max(mag, static_cast<double>(std::abs(alone_logits[v])));
  }
  return {{"sessions", sessions},
          {"prompt_len", prompt_len},
          {"steps", steps},
          {"identical", identical},
          {"identical_prefix", prefix < 0 ? steps : prefix},
          {"share_identical", static_cast<double>(identical) / steps},
          {"prefill_logits_max_abs_diff", diff},
          {"prefill_logits_max_abs", mag},
          {"tokens_alone", alone},
          {"tokens_shared", shared}};
}

std::string bench_table(const nlohmann::json& j) {
  std::string s =
      fmt::format("device: {}, {} bandwidth {:.1f} GB/s", j.value("device", ""),
                  j.value("bandwidth_probe", "measured"), j.value("bandwidth_GBps", 0.0));
  if (j.contains("load_average_start"))
    s += fmt::format(", load average {} (start), {} (end)",
                     j["load_average_start"].get<std::string>(),
                     j["load_average_end"].get<std::string>());
  s += "\n";
  // MoE models add a column: experts read per MoE layer and step
  bool moe = false;
  for (const auto& r : j["results"]) moe = moe || r.contains("experts_touched");
  s += fmt::format(
      "| {:<10} | {:>8} | {:>7} | {:>7} | {:>8} | {:>10} | {:>10} | {:>8} | {:>6} | {:>7} |{}\n",
      "model", "sessions", "context", "workers", "step ms", "tok/s/wkr", "tok/s agg", "GB/s",
      "% BW", "speedup", moe ? " experts |" : "");
  s += "|------------|----------|---------|---------|----------|------------|------------|--------"
       "--|--------|---------|";
  s += moe ? "---------|\n" : "\n";
  for (const auto& r : j["results"])
    s += fmt::format(
        "| {:<10} | {:>8} | {:>7} | {:>7} | {:>8.2f} | {:>10.1f} | {:>10.1f} | {:>8.1f} | "
        "{:>6.1f} | {:>7} |{}\n",
        r["model"].get<std::string>(), r.value("sessions", 1), r["context"].get<int64_t>(),
        r["workers"].get<int>(), r["step_ms"].get<double>(), r["tok_s_per_worker"].get<double>(),
        r["tok_s_aggregate"].get<double>(), r["GBps"].get<double>(), r["pct_of_bw"].get<double>(),
        // 0: the run had no 1-worker row of the same sessions and context to compare with
        r["speedup_vs_1_worker"].get<double>() > 0
            ? fmt::format("{:.2f}", r["speedup_vs_1_worker"].get<double>())
            : std::string("-"),
        !moe ? std::string()
        : r.contains("experts_touched")
            ? fmt::format(" {:>7.1f} |", r["experts_touched"].get<double>())
            : std::string("       - |"));
  return s;
}

}  // namespace hogwild::bench
