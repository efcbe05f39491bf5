// Training traces made by the engine itself: a real Session (layouts, steps, promotions,
// collaboration checks, the model's formatting and chat template) over the bookkeeping backend,
// with the scripted workers of oracle_picker.h. One call of run_trace = one pack solved by
// n_workers scripted workers; generate() runs many in parallel and writes the examples.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collab/countdown.h"
#include "collab/oracle_picker.h"
#include "collab/problems.h"
#include "hogwild/codec.h"
#include "hogwild/formatting.h"
#include "hogwild/layout.h"
#include "hogwild/session.h"

namespace hogwild {
namespace chat {
class ChatTemplate;
}

namespace collab {

/// Byte-level stand-in codec (ids 0..255 = bytes, 256 = EOS "<|end|>"): renders the text corpus
/// the tokenizer is trained on before a tokenizer exists.
class ByteCodec : public TextCodec {
 public:
  static constexpr int32_t kEos = 256;
  std::vector<int32_t> encode(std::string_view text) const override;
  std::string token_bytes(int32_t id) const override;
  int32_t vocab_size() const override { return 257; }
  std::vector<int32_t> eos_ids() const override { return {kEos}; }
};

struct TraceSpec {
  Task task = Task::packs;
  Split split = Split::train;
  int k = 4;  // parts of a pack; for countdown, the numbers (3..6)
  uint64_t pack_seed = 0;
  int n_workers = 2;
  Layout layout = Layout::combined;
  int64_t collab_every = -1;   // -1: the formatting's
  int64_t max_context = 2047;  // tokens of a view (an example is at most max_context + 1)
  int64_t budget = 4000;       // serial steps (packs: a safety net, the oracle ends far earlier;
                               // countdown: the search may run longer)
  PickerOptions picker;
};

struct Trace {
  Pack pack;            // task packs
  Countdown countdown;  // task countdown
  SessionResult result;
  std::vector<Example> examples;
  PickerStats stats;
  bool correct = false;  // the run ended with the pack's total in \boxed{} (countdown: with an
                         // expression that check_countdown accepts)
};

/// Runs one scripted session of spec.task (the policy: Oracle for packs, CountdownOracle for
/// countdown). tmpl: the model's chat template (nullptr when the formatting does not
/// use one). Throws hogwild::Error for a formatting the oracle cannot read (oracle.h).
Trace run_trace(const TraceSpec& spec, const Formatting& fmt, const chat::ChatTemplate* tmpl,
                const TextCodec& codec);

/// How generate() draws each session.
struct Mix {
  double single = 0.2;  // share of one-worker sessions (whole-run examples)
  std::vector<double> workers = {0, 0, 3, 2, 3, 1, 1, 1, 3};  // weights of 0..8 workers (>= 2)
  double interleaved = 0.2, contiguous = 0.2;                 // layout shares (rest: combined)
  int k_min = 2, k_max = 8;
  int numbers_min = 4, numbers_max = 5;  // countdown: numbers per problem, drawn uniformly
  std::vector<int64_t> collab_every = {-1, -1, 0, 64, 256};  // drawn uniformly
  double careless = 0.25;
  /// Sessions made for the collaboration check: this share of the sessions of 2+ workers claims
  /// carelessly with probability collision_careless and checks every collision_every tokens
  /// (drawn uniformly), so checks land on real collisions ("yes", then the worker switches).
  double collisions = 0.35, collision_careless = 0.8;
  std::vector<int64_t> collision_every = {8, 16, 24};
  double keep_decision = 1.0, keep_step_end = 1.0, keep_stop = 0.5, keep_ledger = 1.0;
  double keep_check_no = 0.4;  // "no" answers are most checks: fewer of them, so "yes" counts
};

struct GenerateOptions {
  Task task = Task::packs;
  int64_t sessions = 1000;
  uint64_t seed = 1;  // session i uses seed * 1000003 + i
  int threads = 1;
  Mix mix;
  /// Output: "tokens" writes PREFIX.<thread>.tok (uint16 LE ids), .msk (uint8 loss flags) and
  /// .idx (int64 LE pairs: offset, length) per thread; "text" writes PREFIX.jsonl, one
  /// {"text": ...} per example (the views as text, for training a tokenizer).
  std::string format = "tokens";
  std::string prefix;
  int64_t max_context = 2047;  // tokens of a view (TraceSpec::max_context)
  Split split = Split::train;  // held-out splits render golden texts, never training data
};

struct GenerateSummary {
  int64_t sessions = 0, wrong = 0, over_context = 0, examples = 0, tokens = 0, loss_tokens = 0,
          weighted_tokens = 0;  // loss tokens with flag 2 (decisions and ledgers)
  PickerStats stats;
};

/// Throws hogwild::Error "FLAG must be a probability in [0, 1], got P" unless 0 <= p <= 1.
void check_probability(const char* flag, double p);

/// Runs opt.sessions scripted sessions on opt.threads (1..cpu::kMaxThreads) threads and writes
/// their examples. The model directory gives the tokenizer (codec; nullptr = ByteCodec) and chat
/// template. Deterministic for
/// (seed, sessions, threads). Throws hogwild::Error when an output file cannot be written, or when
/// a "tokens" run has ids above 65535. With "text" and several threads the order of the lines
/// varies from run to run (their set does not).
GenerateSummary generate(const GenerateOptions& opt, const Formatting& fmt,
                         const chat::ChatTemplate* tmpl, const TextCodec& codec);

}  // namespace collab
}  // namespace hogwild
