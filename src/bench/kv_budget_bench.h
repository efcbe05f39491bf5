// `hogwild bench --kv-budgets`: the speed of the KV budget (docs/ARCHITECTURE.md §11 "Bounded
// shared memory"): step time against serial steps for W workers of one model, one real
// hogwild::Session per budget, with the time the session spends choosing and applying what to
// forget measured apart. The same code on every backend: the model directory is loaded as
// `hogwild run` loads it (engine/model.h Model::load, on --device cpu or cuda) and the session is
// built by the same request builder (engine/request.h make_request: the model's tokenizer, chat
// template and formatting, a fixed problem text), then set to run exactly `serial_steps` serial
// steps: no finisher, no stop on an answer, no end-of-sequence, no collaboration questions.
//
// The tokens do not come from the weights (models for this are random): KvBenchPicker draws every
// worker's tokens from a seeded generator over the vocabulary's plain tokens, and ends each step
// after `step_every` generated tokens with the tokens of "." + the formatting's step separator, so
// that the step ends (hogwild/steps.h) and joins the history as in a real run. A step of worker w
// with number k thus holds opening(w, k) + step_every tokens (opening: the tokens of
// Formatting::step_start(w, k, false)); it joins the history after serial step k * step_every + 1.
// The history after serial step s (s >= 1) is the prompt plus, for each k <= (s - 1) / step_every,
// the W steps of number k.
//
// Picks are made on the host (TokenPicker::pick; a real run draws on the device): each serial
// step brings W logits rows to the host. Budgets: 0 = no budget; any other value is
// SessionOptions::kv.budget with the evict policy and its defaults (chunk 16, recent 128, window
// 16). The "scored" row (KvBudgetBenchOptions::scored_row) runs with a budget no run reaches
// (kScoredBudget): the attention scores are measured in every serial step and the choice runs,
// but nothing is forgotten, so its difference from the no-budget row is the scoring's cost.
//
// Result (JSON): {"benchmark": "kv_budget", "backend": "cpu" | "cuda", "device", "model" (the
// directory's name), "model_dir", "model_config": {layers, hidden_size, heads, kv_heads, head_dim,
// vocab_size}, "formatting", "workers", "serial_steps", "step_every", "windows", "prompt_tokens",
// "seed", "results": [one row per budget, in the order given, then the scored row]}. Row:
//   kind            "none" (budget 0), "budget" or "scored"
//   kv_budget       the session's kv.budget (tokens; 0 = none)
//   serial_steps    serial steps run; stop_reason (core/stop_reason.h): "budget" when all ran
//   step_s          host wall time of the serial steps: plan + forward + complete, summed
//   forward_s       of step_s, the forwards (SessionStep::forward_seconds, logits to the host)
//   forget_s        of step_s, choosing and applying what to forget (SessionResult::
//                   forget_seconds); forget_share = forget_s / step_s (the goal: <= 0.03)
//   step_ms         step_s / serial_steps * 1000; forward_ms_median: the median forward (ms)
//   forget_ms_per_step  forget_s / serial_steps * 1000
//   tok_s_per_worker    serial_steps / step_s; tok_s_aggregate: workers x that
//   history_tokens  history length at the end (read or forgotten); read_tokens: still read;
//                   forgotten_tokens = history_tokens - read_tokens; forget_events: forgettings
//   steps_finished  steps that ended (all workers); must be W x floor(serial_steps / step_every)
//   windows         [{from, to (1-based serial steps, inclusive), forward_ms_median,
//                   forward_ms_mean, step_ms_mean, forget_ms (summed over the window),
//                   history_tokens, read_tokens, forgotten_tokens (at the window's last step)}]
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hogwild::bench {

/// The budget of the scored row: the largest kv_budget a request takes (core/request_fields.h),
/// far above any history a run writes, so that nothing is forgotten.
inline constexpr int64_t kScoredBudget = 2147483647;

struct KvBudgetBenchOptions {
  std::string model_dir;        // HF model directory with tokenizer.json (required)
  std::string device = "auto";  // engine/model.h resolve_device: auto, cuda, cpu
  int64_t kv_tokens = 0;        // CUDA KV pool in tokens; 0 = the free GPU memory minus 1 GiB
  int workers = 4;
  std::vector<int64_t> budgets = {0, 4096, 8192, 16384};  // tokens; 0 = no budget
  int64_t serial_steps = 8192;  // serial steps per session (SessionOptions::budget)
  int64_t step_every = 64;      // generated tokens per step, its closing tokens included
  int windows = 16;             // reported windows of serial steps (fewer when fewer steps)
  bool scored_row = true;       // also the row with kScoredBudget
  uint64_t seed = 1;            // KvBenchPicker's seed (worker w: its own stream)
  bool progress = true;         // a line per window on stderr
  // The problem text; with the formatting's rules a prompt of a few hundred tokens.
  std::string problem =
      "A warehouse holds 4 kinds of crates. Crates of kind A weigh 12 kg, kind B 17 kg, kind C "
      "23 kg and kind D 31 kg. A truck carries at most 950 kg and must carry at least 3 crates of "
      "every kind. Over one week the warehouse ships 7 trucks per day, and on each day the share "
      "of kind D crates must not pass one third of the crates shipped that day. Find the largest "
      "total weight the warehouse can ship in the week, and one loading of a truck that reaches "
      "the largest weight a single truck can carry under these rules.";
};

/// Throws hogwild::Error naming the flag: no model directory (-m), no budget or a negative one
/// (--kv-budgets), serial_steps < 1 or above a session's budget range (--serial-steps),
/// step_every < 1 (--step-every), windows < 1 (--windows); RequestError (core/request_fields.h)
/// for a worker count outside 1..64. Needs no file: called before anything loads.
void check_kv_budget_bench_options(const KvBudgetBenchOptions& opt);

/// Loads the model once and runs one session per budget (and the scored row) on it; returns the
/// JSON above. Throws hogwild::Error for bad options (check_kv_budget_bench_options; then, with
/// the tokenizer loaded, a step_every too short for the step's closing tokens, or one whose steps
/// would pass ForgetPolicy::step_tokens), what Model::load and make_request throw (a budget below
/// the prompt plus the recent tokens, a worker count the formatting has no names for), a run
/// whose steps did not end where the picker ended them, and what the backend throws (the cache
/// is full).
nlohmann::json run_kv_budget_bench(const KvBudgetBenchOptions& opt);

/// The results as text: a header line (device, model, workers, serial steps, step length, prompt),
/// a table with one line per row (step ms, forward ms, forget ms per step and share, tok/s, tokens
/// still read and forgotten at the end), then per window the median forward ms and the tokens
/// still read at its end, one column per row.
std::string kv_budget_table(const nlohmann::json& results);

}  // namespace hogwild::bench
