// `hogwild bench`, the part that is the same on every backend: the sweep over (sessions, context,
// workers), the views, the timing, the JSON rows and the table. The backends supply a
// DecodeBenchModel (cuda_bench.h: bf16 on the GPU; cpu_bench.h: fp32 on the host).
//
// One point (S sessions, C context tokens, W workers): S independent problems, each with its own
// shared context block of C tokens and W workers whose current steps already hold step_tokens
// tokens; views as a session builds them (hogwild/layout.h build_views, combined layout:
// [shared context] [other workers' steps] [own step], or with session_layout the header and
// separator blocks too). One step = one forward of S*W rows (every worker feeds one token, all
// with logits), as the Engine batches sessions. warmup steps, then repeat timed steps.
//
// Row fields (JSON, one object per point; the same on every backend):
//   model, context, workers, sessions, rows (= S*W), layout ("bench" | "session")
//   step_ms        median step time (ms); step_ms_min: the fastest
//   tok_s_per_worker  1000 / step_ms;  tok_s_aggregate: rows * 1000 / step_ms
//   weight_bytes   bytes of weights one step reads (DecodeBenchModel::weight_bytes; for a MoE
//                  model the mean over the timed steps of the experts they read)
//   experts_touched  MoE models: experts read per MoE layer and step (the union over the rows)
//   kv_bytes       mean bytes of K/V one step reads: every distinct visible block once
//   GBps           (weight_bytes + kv_bytes) / step time, in 1e9 bytes/s
//   pct_of_bw      GBps as % of the measured bandwidth (the top-level "bandwidth_GBps")
//   speedup_vs_1_worker  tok_s_aggregate / that of W = 1 at the same S and C (0 without W = 1)
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "kv/backend.h"

namespace hogwild::bench {

struct DecodeBenchOptions {
  std::vector<int> workers = {1, 2, 4, 8};
  std::vector<int64_t> contexts = {1024, 8192, 16384};
  std::vector<int> sessions = {1};  // S concurrent problems, each with its own shared context
  int64_t step_tokens = 32;         // tokens already in each worker's current step
  int warmup = 3;
  int repeat = 20;
  uint64_t seed = 1;
  bool progress = true;  // a line per point on stderr
  // The combined layout as `hogwild run` builds it (docs/ARCHITECTURE.md §3, hogwild/layout.h
  // build_views): besides the steps, an "others' header" block after the shared context, a
  // separator block after every other worker's step but the last, and a "separator + own header"
  // block per worker (none with one worker).
  bool session_layout = false;
};

/// Throws hogwild::Error naming the flag when a list is empty or holds a session count < 1, a
/// context < 0, or repeat < 1 / warmup < 0 / step_tokens < 0; RequestError (the table's sentence,
/// core/request_fields.h) for a worker count outside a session's 1..64.
void check_decode_bench_options(const DecodeBenchOptions& opt);

/// What the sweep needs of one model on one backend.
struct DecodeBenchModel {
  std::string name;  // the "model" field of its rows
  Backend* backend = nullptr;
  double weight_bytes = 0;        // bytes of weights one decode step reads
  double kv_bytes_per_token = 0;  // K and V of one token over all layers
  // Sets block b (empty) to len tokens of K/V; seed tells blocks apart.
  std::function<void(BlockId b, int64_t len, uint64_t seed)> fill_block;
  // One forward of the batch, returning when its results are ready (a GPU synchronizes).
  std::function<void(const ForwardBatch&)> step;
  // Optional: throws hogwild::Error when `tokens` more tokens cannot be cached.
  std::function<void(int64_t tokens)> require_kv_tokens;
  // Optional, for mixture-of-experts models: {bytes of weights the last step read, experts it
  // read per MoE layer (mean over the layers)}. When set, a row's weight_bytes is the mean over
  // the timed steps and the row gains "experts_touched" (the mean union of the rows' experts).
  std::function<std::pair<double, double>()> last_step_reads;
};

/// The fields of a DecodeBenchModel that every backend fills alike: name, backend, the bytes a
/// step reads (B::weight_bytes_per_step(), B::kv_bytes_per_token()) and fill_block from
/// B::fill_block_random. The caller adds step (and require_kv_tokens). be must outlive the result.
template <class B>
DecodeBenchModel decode_bench_model(B& be, const std::string& name) {
  DecodeBenchModel m;
  m.name = name;
  m.backend = &be;
  m.weight_bytes = static_cast<double>(be.weight_bytes_per_step());
  m.kv_bytes_per_token = static_cast<double>(be.kv_bytes_per_token());
  m.fill_block = [&be](BlockId b, int64_t len, uint64_t seed) {
    be.fill_block_random(b, len, seed);
  };
  return m;
}

/// Runs every point of opt (sessions outermost, then contexts, then workers) on m and appends its
/// rows (fields above) to out["results"]. bandwidth_gbs: the measured bandwidth (1e9 bytes/s) that
/// pct_of_bw refers to. Throws what m's functions throw.
void run_decode_sweep(const DecodeBenchModel& m, const DecodeBenchOptions& opt,
                      double bandwidth_gbs, nlohmann::json& out);

/// Batch invariance of greedy decoding: does a sequence's output depend on the other rows of its
/// forwards? `sessions` sequences of `prompt_len` random prompt tokens (ids below the vocabulary,
/// from seed), each in its own block with its own view; sequence 0 is prefilled in one forward
/// and decodes `steps` tokens greedily (argmax, lowest id among ties), first alone (one row per
/// forward), then beside the other sessions - 1 (their prompts prefilled in the same forward, one
/// row each per decode forward), as the Engine batches sessions. Returns {"sessions",
/// "prompt_len", "steps", "identical" (positions where sequence 0's tokens agree),
/// "identical_prefix" (tokens before the first difference; = steps when none),
/// "share_identical" (identical / steps), "prefill_logits_max_abs_diff" and
/// "prefill_logits_max_abs" (sequence 0's logits after its prompt, same inputs in both runs: the
/// float noise that other rows add), "tokens_alone", "tokens_shared" (sequence 0's tokens)}. Blocks
/// are freed. Throws what the backend throws (e.g. the cache is full), hogwild::Error for sessions
/// < 1, prompt_len < 1 or steps < 1.
nlohmann::json measure_batch_invariance(Backend& be, int sessions, int64_t prompt_len, int steps,
                                        uint64_t seed);

/// The results of a run as a text table: a header line from the top-level "device",
/// "bandwidth_GBps", "bandwidth_probe" (and "load_average_start/end" where present), then one row
/// per point.
std::string bench_table(const nlohmann::json& results);

}  // namespace hogwild::bench
