// Bounded shared memory (docs/ARCHITECTURE.md "Bounded shared memory"): which tokens of the shared
// history a session forgets when the history passes its KV budget. Pure functions and a small
// window of scores, no backend: the session (session_decode.cpp) measures the scores
// (Backend::attention_scores), calls choose_forgotten after each promotion and hands the result
// to Backend::forget_tokens.
//
// Policy (the first of issue "Bounded shared memory", after R-KV, Cai et al. 2025, and H2O, Zhang
// et al. 2023): a history token's score (its importance) is the largest softmax attention weight
// any worker's query gave it, at any layer and head, over the last `window` serial steps (the
// max over workers: a token any worker reads must stay). The history is cut into fixed chunks of
// `chunk` tokens at block-local indices [i * chunk, (i + 1) * chunk); a chunk's score is the
// largest score of its tokens. Chunks that touch a protected range (the
// prompt with its rules, each finished step's opening text — its step header — and its last
// sentence when it has several — its conclusion —, notes; the session lists them) or the last
// `recent` tokens are never forgotten; of the others, the lowest scores go first (ties: the
// older chunk first) until the tokens still read fit the budget.
//
// R-KV's redundancy term (ForgetPolicy::redundancy_weight w > 0; R-KV's 1 - lambda; off by
// default): the session also measures, when a choice is due, how much each candidate chunk's keys
// repeat the other candidates' (Backend::key_redundancy: mean cosine similarity of chunk keys);
// importance and redundancy are each put on [0, 1] over the candidates (min-max) and a chunk's
// score is (1 - w) * importance - w * redundancy (combined_scores), so that of two equally
// attended chunks the one that says again what others say goes first.
//
// The second policy, summarise-and-drop (KvPolicy::summarise; as Delethink and InftyThink do for
// one sequence): when the history's tokens still read pass summary_trigger, the next worker whose
// step ends (the lowest index among those ending in the same serial step) writes a summary step
// instead of its next ordinary step, opened by the formatting's summary prompt and at most its
// summary.max_tokens long; once that step joins the history, everything between the prompt and
// the summary is forgotten (summarised_ranges: the finished steps and earlier summaries; a
// person's notes stay). No score is measured. docs/ARCHITECTURE.md §11.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace hogwild {

using TokenRange = std::pair<int64_t, int64_t>;  // block-local [begin, end)

/// What a session does when its history passes the KV budget.
enum class KvPolicy {
  evict,      // forget the least attended chunks (choose_forgotten)
  summarise,  // one worker writes a summary step; what it summarises is forgotten
};

/// "evict" / "summarise" (the spelling of --kv-policy and hogwild.kv_policy).
std::string_view kv_policy_name(KvPolicy p);
/// The policy of that name ("summarize" is taken too); nullopt for any other text.
std::optional<KvPolicy> parse_kv_policy(std::string_view name);

/// Settings of a session's KV budget (SessionOptions).
struct ForgetPolicy {
  int64_t budget = 0;    // tokens of the shared history that take part in attention; 0 = unlimited
  int64_t chunk = 16;    // granularity in tokens (a quarter of a KV pool page, kKvPageTokens)
  int64_t recent = 128;  // the history's last `recent` tokens are never forgotten
  int64_t window = 16;   // serial steps whose scores count
  // The longest step a worker may write (tokens, its opening included): the session's KV
  // reservation counts each worker's step at this length (kv_budget.h); a step that would pass it
  // ends the run as the context limit does.
  int64_t step_tokens = 512;
  KvPolicy policy = KvPolicy::evict;
  // R-KV's redundancy term (Cai et al. 2025, arXiv 2505.24133, §3 "redundancy estimation" and
  // "joint selection"): the weight w in [0, 1] of redundancy in a chunk's score, (1 - w) *
  // importance - w * redundancy (combined_scores); R-KV's 1 - lambda (its mix_lambda; the paper
  // uses lambda = 0.1, w = 0.9). 0 = off: importance alone, as without the term.
  double redundancy_weight = 0.0;
};

/// Summarise-and-drop: the history's tokens still read above which a summary step is due, for a
/// budget (> 0) shared by n_workers workers with summaries of at most summary_tokens generated
/// tokens: budget - n_workers * summary_tokens, leaving room for the summary itself and for what
/// the other workers write into the history while it is written (one token per serial step
/// each). At least 0.
int64_t summary_trigger(int64_t budget, int n_workers, int64_t summary_tokens);

/// Summarise-and-drop: the history ranges a summary that begins at history index summary_begin
/// replaces: [head, summary_begin) (head: the prompt's tokens), less the ranges in `keep` (a
/// person's notes; any order) and what `gaps` (sorted, disjoint) already forgot. Sorted,
/// disjoint; {} when nothing lies between.
std::vector<TokenRange> summarised_ranges(int64_t head, int64_t summary_begin,
                                          const std::vector<TokenRange>& keep,
                                          const std::vector<TokenRange>& gaps);

/// The most pages of `page` tokens the history of a session with this KV budget (tokens, > 0)
/// holds after each serial step's forgetting: ceil(budget / page) + 2 (the page the prompt ends
/// in, which steps share, and the page the history grows into).
int64_t history_page_cap(int64_t budget, int64_t page);

/// Pages a history of `len` tokens with these gaps (sorted, disjoint) holds: every page
/// [k * page, (k + 1) * page) not wholly inside the gaps, the partial last page included (it is
/// written again). The count BlockTable::held_pages gives for the history block.
int64_t held_pages(int64_t len, const std::vector<TokenRange>& gaps, int64_t page);

/// The memory cap (docs/ARCHITECTURE.md "Bounded shared memory"): when the history holds more
/// than `cap` pages after the score's choice (a page goes back only when all of its tokens are
/// forgotten), whole full pages to forget as well, the oldest first, whatever their score or
/// protection, except the pages touching the first `head` tokens (the prompt) or the last
/// `recent`. Returns page ranges [k * page, (k + 1) * page), sorted; {} when within the cap.
/// With cap >= history_page_cap(head + recent, page) the result always reaches the cap.
/// Throws hogwild::Error when page < 1.
std::vector<TokenRange> pages_over_cap(int64_t len, const std::vector<TokenRange>& gaps,
                                       int64_t head, int64_t recent, int64_t page, int64_t cap);

/// The largest score each history token got over the last `window` serial steps.
class ScoreWindow {
 public:
  explicit ScoreWindow(int64_t window) : window_(window) {}
  /// Adds one forward's scores (Backend::attention_scores of the history block: (len at that
  /// forward) weights in [0, 1]); the oldest leaves once there are more than `window`.
  void push(std::vector<float> scores);
  /// (len) the max over the window per token; tokens no forward in the window measured (newer than
  /// every entry) get +infinity, so that nothing unseen is forgotten.
  std::vector<float> max_scores(int64_t len) const;
  size_t size() const { return steps_.size(); }

 private:
  int64_t window_;
  std::deque<std::vector<float>> steps_;
};

/// The ranges sorted and merged (overlapping or touching ones joined), as BlockTable keeps gaps.
std::vector<TokenRange> merge_ranges(std::vector<TokenRange> ranges);

/// The parts of `ranges` (sorted, disjoint) outside `gaps` (sorted, disjoint), in order.
std::vector<TokenRange> outside_ranges(const std::vector<TokenRange>& ranges,
                                       const std::vector<TokenRange>& gaps);

/// Tokens still read in a history of `len` tokens with these gaps (sorted, disjoint).
int64_t kept_tokens(int64_t len, const std::vector<TokenRange>& gaps);

/// A chunk choose_forgotten may drop: [begin, begin + chunk) of the history, `kept` of its tokens
/// not forgotten yet (1..chunk).
struct ForgetCandidate {
  int64_t begin = 0;
  int64_t kept = 0;
};

/// The chunks choose_forgotten chooses among, in history order: whole chunks [i * chunk,
/// (i + 1) * chunk) ending at or before len - recent that touch no `protect` range and keep at
/// least one token outside `gaps` (sorted, disjoint). The session asks the backend for their
/// redundancy (Backend::key_redundancy) in this order. Throws hogwild::Error when chunk < 1.
std::vector<ForgetCandidate> forget_candidates(int64_t len, const std::vector<TokenRange>& gaps,
                                               const std::vector<TokenRange>& protect,
                                               const ForgetPolicy& policy);

/// R-KV's joint selection score (Cai et al. 2025, §3) of each candidate: importance[i] (the
/// largest score of the chunk's kept tokens, any float; +infinity = not measured yet) and
/// redundancy[i] (mean cosine similarity to the other candidates, in [-1, 1]) are each scaled to
/// [0, 1] over the candidates, (x - min) / (max - min) (all 0 when max == min; importance over
/// its finite values only), and combined as (1 - w) * importance - w * redundancy, w = weight.
/// A candidate of infinite importance keeps +infinity (never chosen before a measured one).
/// Min-max puts the two on one scale whatever the model's attention spread (importance is a
/// softmax weight, often far below 1); R-KV softmax-normalises its redundancy instead, which
/// over a few dozen chunks squeezes the differences. Throws hogwild::Error when the sizes differ.
std::vector<float> combined_scores(const std::vector<float>& importance,
                                   const std::vector<float>& redundancy, double weight);

/// The chunks to forget now (sorted by index, each [i * chunk, (i + 1) * chunk), whole chunks
/// below len - recent only) so that kept_tokens(len, gaps + result) <= budget, or every chunk
/// that may go when that is not enough. `gaps`: already forgotten (sorted, disjoint; a chunk
/// wholly inside them is not chosen again, one partly inside counts its kept tokens only);
/// `protect`: ranges never forgotten (any order); `score`: (len) per token (ScoreWindow).
/// `redundancy`: with policy.redundancy_weight > 0, one value per forget_candidates(...) chunk in
/// its order (Backend::key_redundancy), combined with importance by combined_scores; ignored when
/// the weight is 0 (importance alone). Returns {} when the budget is 0 (unlimited) or already
/// met. Throws hogwild::Error when score.size() != len, chunk < 1, or the weight is > 0 and
/// redundancy does not hold one value per candidate.
std::vector<TokenRange> choose_forgotten(int64_t len, const std::vector<TokenRange>& gaps,
                                         const std::vector<TokenRange>& protect,
                                         const std::vector<float>& score,
                                         const ForgetPolicy& policy,
                                         const std::vector<float>& redundancy = {});

}  // namespace hogwild
