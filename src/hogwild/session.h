// A Hogwild! session (docs/ARCHITECTURE.md; paper arXiv 2504.06261 §3): n_workers instances of one
// model reason together over one shared KV cache, one batched forward per serial step.
//
// The session is steppable: plan() describes its part of the next forward (a SessionStep: its
// tokens, its workers' views, how each logits row is to be drawn), the caller runs that forward,
// alone (run_forward in batch.h) or merged with other sessions' parts (engine/engine.h), and
// complete() consumes the result and reports what happened (StepReport). run() is the loop of the
// three for one session alone.
//
// Life of a run (session.cpp; the serial steps in session_decode.cpp, the finisher in
// session_finisher.cpp). What differs between the generation methods is the session's method
// (method.h, docs/ARCHITECTURE.md §4 "Methods"), which the session asks at fixed points: plain
// Hogwild!'s rules (method.cpp), the independent layout's (independent.cpp) and
// Skeleton-of-Thought's phases (skeleton.cpp):
//   prefill   the prompt into the history block, in chunks of at most the caller's prompt-token
//             budget per forward; the LAST chunk also writes every constant layout text (others'
//             header, separator, separator + own header) into its own block, by a pseudo-writer
//             whose view is [history][that block] (layout.h).
//   serial    ONE forward per serial step: every active worker feeds its pending tokens (1 while
//   steps     decoding; after a step ended: the step's last token + the next step's prefix, and the
//             collaboration-check question when due). No padding. Each worker samples from the
//             logits of its last fed token.
//   steps     A step ends by steps.h find_step_end on the step's token bytes. Its block becomes a
//             "closing" block: in the next forward it is read as the tail of the history (finishing
//             order, ties by worker index) while its last token is fed into it, and right after
//             that forward it is appended to the history block (Backend::append_block: keys rotated
//             once, no forward). So the KV history reads exactly like the text history: every step
//             followed by its separator, which is inside the step's last token.
//             contiguous layout: nothing moves; the next prefix follows in the same block.
//   stopping  a finished step with a final answer (answer.h step_answer) ends the run for all;
//             EOS (only when not forbidden) stops that worker, the others go on; the budget
//             (serial steps after the prefill) or max_context ends the run with the finisher;
//             an interrupt flag ends it without the finisher.
//   finisher  temporary block after finisher_view (layout.h): prompt, history, every unfinished
//             step + separator, the formatting's finisher suffix; greedy decoding for at most
//             finisher.max_tokens, one token per forward (the workers wait meanwhile; serial steps
//             do not advance), then the block is freed. The cache of the run is not touched, so
//             it also serves snapshots at intermediate budgets.
//
// Tokens that were sampled but not yet fed when the finisher runs (the last round's) are not part
// of the finisher's text.
//
// Independent layout (method.h IndependentMethod; self-consistency with the prompt's KV shared;
// layout.h): each worker sees only [history][its own output] and writes under worker 0's step
// prefix (every worker is one independent solver; the prompt is the single-worker one). Stopping is
// per worker: a worker whose finished step holds an answer, or that emits EOS (when allowed),
// stops; the others go on; the collaboration check counts each worker's own tokens. The run ends
// when every worker stopped, or at the budget. The finisher runs per worker that has no answer,
// over [history][its own output][sep][suffix] (all of them in one forward), at every snapshot and
// at the end; the result's `workers` holds each worker's outcome and `answer` their plain vote
// (answer.h majority_answer, identical texts). Worker w with seed s draws exactly what a one-worker
// session with seed s + w draws.
//
// Skeleton-of-Thought (method.h SkeletonMethod; SessionOptions::skeleton, independent layout,
// n_workers = the most points; formatting "sot"): phase outline: worker 0 alone writes the outline
// after sot.outline_prefix; it ends at the first step separator (or EOS, or
// sot.outline_max_tokens). Its block then closes and joins the history exactly like a finished step
// (layout.h "closing"), and its numbered points (skeleton.h parse_outline, at most n_workers) go to
// workers 0..K-1. Phase expand: worker k writes point k+1 after sot.point_prefix in a new block,
// its view [history = prompt + outline] [own expansion]; an expansion ends at its first step end
// (or EOS). A finished expansion's last token waits. Phase answer, when no expansion runs: the
// expansions close together (their waiting last tokens fed, no rows; point order) and join the
// history, and worker 0 opens the answer step (sot.answer_prefix) in the same forward, its view
// [history][closing expansions...][answer]. From there on the usual rules: a finished step with an
// answer ends the run, the budget ends it with the finisher (the linearised text of every phase).
// Every phase is counted in serial steps.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/stop_reason.h"
#include "hogwild/codec.h"
#include "hogwild/forgetting.h"
#include "hogwild/formatting.h"
#include "hogwild/layout.h"
#include "kv/backend.h"

namespace hogwild {

/// Chooses a worker's next token from its logits. Forbidden tokens already have -inf logits.
class TokenPicker {
 public:
  virtual ~TokenPicker() = default;
  /// logits: (vocab_size) fp32, may be modified. Returns a vocabulary id.
  virtual int32_t pick(int worker, std::vector<float>& logits) = 0;
  /// Device sampling (the forward's draw, ForwardBatch::draw): describes worker's next pick as a
  /// RowSampling (drawing its uniform now) and returns true, or returns false when the pick needs
  /// the host logits (then pick() is called). After true, the caller reports the drawn token to
  /// picked().
  virtual bool device_row(int /*worker*/, RowSampling& /*out*/) { return false; }
  virtual void picked(int /*worker*/, int32_t /*token*/) {}
};

struct SessionOptions {
  int n_workers = 2;  // 1..formatting.worker_names.size()
  Layout layout = Layout::combined;
  int64_t budget = 0;                 // serial steps (forwards after the prefill); 0 = unlimited
  std::vector<int64_t> snapshots;     // serial-step counts at which the finisher runs on the state
  int64_t collab_every = -1;          // generated tokens between checks; -1 = formatting's; 0 = off
  int64_t max_context = 0;            // max tokens in any view; 0 = config max_position_embeddings
  int64_t max_tokens_per_worker = 0;  // generated tokens per worker; 0 = unlimited
  bool stop_on_answer = true;         // false: run to the budget even when a step holds an answer
  std::vector<int32_t> extra_eos;     // EOS ids besides the codec's and the model config's
                                      // (generation_config.json's; stop_policy.h)
  const std::atomic<bool>* interrupt = nullptr;  // set (e.g. by SIGINT) to stop after this step
  // Draw in the forward (ForwardBatch::draw: the one sampling contract of sampling/row_draw.h, on
  // the device for CUDA) when the picker describes every row of a forward
  // (TokenPicker::device_row); ForwardRecord::logits is then null for those forwards. false: the
  // logits come to the host and TokenPicker::pick draws.
  bool device_sampling = false;
  // With device sampling, also bring each forward's logits rows to the host (for dumps such as
  // `run --dump-logits`; ForwardDraw::keep_logits): ForwardRecord::logits is then never
  // null. Costs one copy per forward.
  bool keep_logits = false;
  // Skeleton-of-Thought (above): layout must be independent; n_workers = the most points.
  bool skeleton = false;
  // false: a run that ends without an answer ends there, without the finisher (a plain
  // completion, engine/request.h make_plain_request: its text is the output, not an answer);
  // snapshots need it.
  bool finisher = true;
  // true: no id ends a worker (`generate --ignore-eos`, vLLM's ignore_eos): an end-of-sequence
  // id that is drawn is an ordinary token, fed like any other.
  bool ignore_eos = false;
  // KV budget (hogwild/forgetting.h, docs/ARCHITECTURE.md "Bounded shared memory"): when the
  // shared history's tokens still read pass kv.budget, the session forgets the history's least
  // attended chunks (kv.policy evict), or one worker writes a summary step and the steps it sums
  // up are forgotten (kv.policy summarise). kv.budget 0 = unlimited (nothing is measured or
  // forgotten). Needs the combined or interleaved layout and a backend that can forget
  // (Backend::can_forget); kv.redundancy_weight > 0 also one that measures key redundancy
  // (Backend::measures_redundancy: the CPU and CUDA backends).
  ForgetPolicy kv;
};

/// What the shared history forgot after one serial step (SessionObserver::on_forget,
/// SessionResult::forgotten).
struct ForgetEvent {
  int64_t serial_step = 0;         // forgotten right after this serial step's promotions
  BlockId block = -1;              // the history block
  std::vector<TokenRange> ranges;  // block-local [begin, end), sorted; positions are unchanged
  std::vector<std::string> texts;  // the bytes of each range, as fed
  int64_t kept = 0;                // history tokens still read afterwards
  int64_t history_len = 0;         // history tokens in all (read or forgotten)
  // Summarise-and-drop (KvPolicy::summarise): the summary step that replaced the ranges, by
  // worker `summary_worker` (its step `summary_step`), at history indices `summary`
  // [begin, end). summary_worker -1: no summary (evict's choice, or the memory cap alone).
  int summary_worker = -1;
  int summary_step = 0;
  TokenRange summary{0, 0};
};

/// Where a fed token came from.
/// step_end: the step separator the session writes to close a summary step that reached the
/// formatting's summary.max_tokens (the KV budget's summarise-and-drop).
enum class FeedRole { prompt, constant, step_start, generated, note, finisher, step_end };

/// What a forward was for: the prefill (serial step 0, possibly in chunks), a serial step, or one
/// of the finisher's forwards (SessionObserver::on_finisher_forward; final or snapshot).
enum class ForwardKind { prefill, step, finisher };

/// One token fed in a forward (for observers, --dump-views and the reference test).
struct FedToken {
  int32_t token = 0;
  int worker = -1;     // writer worker; -1 for prefill (prompt and constant blocks)
  int step = 0;        // the worker's 1-based step the token belongs to; 0 in prefill
  BlockId block = -1;  // target block
  int64_t index = 0;   // block-local index written
  FeedRole role = FeedRole::generated;
};

/// One forward as the session ran it.
struct ForwardRecord {
  int64_t serial_step = 0;                  // 0 = prefill; finisher: the budget it runs at
  std::vector<std::vector<BlockId>> views;  // as passed to the backend (prefill: pseudo-writers)
  std::vector<FedToken> tokens;             // batch order
  std::vector<std::pair<int, int>> closed;  // (worker, step) promoted after this forward, in order
  std::vector<int> logit_workers;           // worker of each logits row (prefill: -1)
  const std::vector<float>* logits = nullptr;  // (logit_workers.size(), vocab_size); null when
                                               // the forward sampled on the device
  ForwardKind kind = ForwardKind::step;
  std::vector<BlockId> promoted;  // blocks of `closed`, in order, appended to the history block
                                  // right after this forward (their ids may be reused later)
  bool snapshot = false;          // finisher forwards: of a snapshot (else the final finisher)
  // With a KV budget (SessionOptions::kv), serial steps: the history block's attention scores
  // measured in this forward (Backend::attention_scores: (history length) weights); else null.
  const std::vector<float>* history_scores = nullptr;
};

/// A sampled token, for streaming.
struct TokenEvent {
  int worker = 0;
  int step = 0;             // worker's 1-based step
  int64_t serial_step = 0;  // forward whose logits gave it
  int32_t token = 0;
  std::string bytes;  // raw token bytes (TextCodec::token_bytes)
  bool eos = false;   // the worker stopped on it (not fed)
};

/// Result of a finisher run (final or snapshot).
struct FinisherResult {
  int64_t serial_step = 0;   // budget at which it ran
  std::string continuation;  // greedy bytes after the suffix
  std::optional<std::string> answer;
  bool reached = true;  // false: the run ended before this budget (answer = final)
  int worker = -1;      // independent layout: the worker whose own text it continued; -1: all
  // The finisher's view (the run's text and the suffix) would pass the context limit: it did not
  // run (no position beyond max_context is read), so continuation is empty and answer none.
  bool context_full = false;
};

/// Independent layout: one worker's outcome (SessionResult::workers).
struct WorkerResult {
  std::optional<std::string> answer;  // its finished step's, else its final finisher's
  // answer (its step held one), eos, max_tokens, max_context, or the run's end for a worker
  // still writing then (budget, interrupted); none while it runs.
  StopReason stop_reason = StopReason::none;
  int64_t serial_steps = 0;                // serial steps when it stopped (its last token's)
  std::optional<FinisherResult> finisher;  // its final finisher, when one ran
};

/// One session's part of a forward: Session::plan fills it, the caller runs the forward
/// (batch.h run_forward, alone or merged with other sessions' steps), Session::complete reads it.
struct SessionStep {
  ForwardBatch batch;         // the session's tokens; views and writer indices are its own
  std::vector<FedToken> fed;  // per token of batch.tokens
  std::vector<int> rows;      // worker of each want_logits row (batch order); -1: prompt/finisher
  // How each row is drawn when !host_logits (RowSampling::banned: -1 or 0 = *banned).
  std::vector<RowSampling> sampling;
  const std::vector<int32_t>* banned = nullptr;  // the session's forbidden ids
  // true: complete() needs the rows' logits on the host (a TokenPicker::pick, several workers
  // drawing from the prompt row).
  bool host_logits = false;
  // true: the rows are drawn as host_logits says, and their logits are wanted on the host as well
  // (SessionOptions::keep_logits, for dumps); run_forward fills `logits` either way.
  bool keep_logits = false;
  int64_t prompt_tokens = 0;  // prompt tokens in this forward (prefill chunks)
  // Filled by the caller after the forward (batch.h run_forward):
  std::vector<float> logits;   // (rows, vocab_size) when host_logits or keep_logits
  std::vector<int32_t> drawn;  // (rows) the drawn tokens when !host_logits
  // (batch.score_blocks) Backend::attention_scores of the session's score blocks, in order.
  std::vector<std::vector<float>> scores;
  double forward_seconds = 0;  // wall time of the (merged) forward
};

/// What one completed step did (Session::complete), for schedulers, streams and progress.
struct StepReport {
  enum class Phase { prefill, decode, finisher, done };
  Phase phase = Phase::prefill;  // phase of the step just completed
  int64_t serial_step = 0;       // the session's serial steps so far
  std::vector<int> tokens;       // tokens sampled in this step, per worker
  int steps_finished = 0;        // steps that ended on a token of this step
  int promotions = 0;            // steps appended to the history after this forward
  bool answer = false;           // a worker's step held a final answer
  bool finished = false;         // the session is done (result() is final)
};

/// Observer of a session; every callback runs on the session's thread.
class SessionObserver {
 public:
  virtual ~SessionObserver() = default;
  virtual void on_forward(const ForwardRecord&) {}
  /// A new step started: its text opening (prefix and maybe the collaboration question).
  virtual void on_step_start(int worker, int step, const std::string& bytes, bool collab_check) {}
  virtual void on_token(const TokenEvent&) {}
  /// A step ended (text = its bytes, prefix included); answer when it holds a final answer.
  virtual void on_step_end(int worker, int step, const std::string& text,
                           const std::optional<std::string>& answer) {}
  virtual void on_snapshot(const FinisherResult&) {}
  /// A person's note entered the shared history (text = its bytes as fed, prefix and separator
  /// included), in the forward of serial step `serial_step`; workers read it from the next one.
  virtual void on_note(const std::string& author, const std::string& text, int64_t serial_step) {}
  /// One forward of the finisher (kind finisher; serial_step = the budget it runs at): the
  /// suffix, then one greedy token per forward. Its block is freed when the finisher ends.
  virtual void on_finisher_forward(const ForwardRecord&) {}
  /// The KV budget made the shared history forget ranges of tokens (SessionOptions::kv); from the
  /// next forward on no worker reads them.
  virtual void on_forget(const ForgetEvent&) {}
};

struct SessionResult {
  std::optional<std::string> answer;
  // answer, budget, eos, max_context, max_tokens, interrupted, cancelled, error; the independent
  // layout also mixed (core/stop_reason.h).
  StopReason stop_reason = StopReason::none;
  int answer_worker = -1;    // worker whose step held the answer (-1: finisher / none)
  int64_t serial_steps = 0;  // forwards after the prefill
  int64_t prompt_tokens = 0;
  // Of prompt_tokens, those whose K/V came from the prefix cache (Session::share_prompt): not
  // fed in the prefill. A multiple of kKvPageTokens; 0 without a hit.
  int64_t prompt_cached_tokens = 0;
  std::vector<int64_t> tokens_per_worker;  // generated (sampled) tokens
  double prefill_seconds = 0, decode_seconds = 0, finisher_seconds = 0;
  // Of decode_seconds, the time inside the backend's forwards (Backend::forward:
  // planning, uploads, the model, sampling on the device); the rest is the session's host work
  // (scheduling, step ends, promotions, observers such as the live view).
  double decode_forward_seconds = 0;
  std::optional<FinisherResult> finisher;  // when the finisher gave the answer
  std::vector<FinisherResult> snapshots;   // one per SessionOptions::snapshots entry, sorted;
                                           // independent layout: one per (snapshot, worker
                                           // without an answer by then), by budget then worker,
                                           // and for budgets not reached one per worker
  std::string history_text;             // bytes of the history: prompt + finished steps (the last
                                        // round's finished steps without their unfed last token)
  std::vector<std::string> unfinished;  // bytes of each worker's unfinished step (contiguous: all)
  std::vector<WorkerResult> workers;    // independent layout (not skeleton): per worker
  std::vector<std::string> outline_points;  // skeleton: the outline's points, in order
  // KV budget (SessionOptions::kv): every forgetting, in order, and the history tokens forgotten.
  std::vector<ForgetEvent> forgotten;
  int64_t forgotten_tokens = 0;
  // KV budget: of decode_seconds, the host time spent after each serial step's promotions
  // choosing what to forget and forgetting it (evict: the score window, choose_forgotten, the
  // memory cap, Backend::forget_tokens; summarise: the drop and the trigger). The scores
  // themselves are measured in the forwards (decode_forward_seconds). 0 without a budget.
  double forget_seconds = 0;
  // KV budget, summarise-and-drop: summary steps started (one may be unfinished at the end).
  int summaries_started = 0;
};

class SessionMethod;

class Session {
 public:
  /// Throws hogwild::Error for bad options (worker count, budget, snapshots, empty finisher).
  /// PRECONDITION: backend, codec, formatting, picker outlive the session; the blocks the session
  /// creates are used only by it.
  Session(Backend& backend, const TextCodec& codec, const Formatting& formatting,
          SessionOptions options, TokenPicker& picker);
  ~Session();

  void set_observer(SessionObserver* obs) { obs_ = obs; }
  /// Runs to the end alone (start, then plan / run_forward / complete until finished). Callable
  /// once. The session's blocks stay in the cache (tests read them); release() frees them.
  SessionResult run(const std::vector<int32_t>& prompt);

  /// Takes the prompt: token ids of the full prompt (chat template applied; see prompt.h).
  /// Creates no blocks yet. Throws hogwild::Error for an empty prompt or one that leaves no room
  /// below max_context. Callable once.
  void start(const std::vector<int32_t>& prompt);
  /// Automatic prefix caching (docs/ARCHITECTURE.md §2 "Prefix sharing"; the engine turns it on,
  /// EngineOptions::prefix_cache): after each prefill forward the full pages of the prompt fed so
  /// far are cached (Backend::cache_prefix), and share_prompt may start the history block with
  /// cached pages. Call before share_prompt and the first plan().
  void use_prefix_cache() { prefix_cache_ = true; }
  /// What share_prompt would share now: the cached pages that begin the prompt, at most up to
  /// its last token, which is always fed (its logits row starts the workers). {} without
  /// use_prefix_cache or after the prefill began.
  PrefixHit cached_prompt() const;
  /// Creates the session's blocks now and, with use_prefix_cache, starts the history block with
  /// the cached pages cached_prompt() finds: the prefill feeds only the rest of the prompt.
  /// Returns the prompt tokens shared (SessionResult::prompt_cached_tokens). Callable once,
  /// after start() and before the first plan() (the engine calls it when it admits the session).
  int64_t share_prompt();
  /// Fills `step` (cleared first) with this session's part of the next forward. At most
  /// max_prompt_tokens prompt tokens are planned (a chunk of the prefill; the last chunk also
  /// holds the constant blocks, whatever their size); with 0 a session still prefilling plans
  /// nothing. Returns false when nothing is planned (finished, or waiting for prompt budget).
  /// Creates blocks (Backend::new_block throws when the cache is full).
  bool plan(SessionStep& step, int64_t max_prompt_tokens);
  /// Consumes the forward's results for `step` (the last plan()): records the tokens, promotes
  /// closed steps, samples, runs the stopping rules and observers. Returns what happened.
  StepReport complete(SessionStep& step);
  /// Queues a note by `author` (a person, not a worker) for the shared history: at the next
  /// decode forward its tokens (formatting note_text) are written into a block of their own by a
  /// pseudo-writer whose view is [history][closing steps...][note], i.e. computed once as the
  /// next finished step of the history; right after that forward the block is appended to the
  /// history (after that forward's closing steps), so every worker reads it from the following
  /// serial step on (docs/ARCHITECTURE.md §4, "Notes"). Throws hogwild::Error for an empty note
  /// or a finished session.
  void add_note(const std::string& author, const std::string& text);
  /// Stops the session between steps: no finisher; stop_reason = reason ("cancelled", or
  /// "error" when a scheduler ends it after a failure); frees its blocks.
  void cancel(StopReason reason = StopReason::cancelled);
  /// Frees every block the session holds (idempotent). Called by the engine when it finishes.
  void release();
  bool started() const { return started_; }
  bool finished() const { return phase_ == Phase::done; }
  bool prefilling() const { return phase_ == Phase::prefill; }
  /// The result; final once finished().
  const SessionResult& result() const { return result_; }
  const SessionOptions& options() const { return opt_; }
  int64_t serial_steps() const { return serial_; }

  /// The most serial steps a session of these options runs (0 = no bound from them), as its method
  /// says (SessionMethod::serial_steps_bound): the budget, or max_tokens_per_worker when that is
  /// smaller (each serial step samples one token of every active worker; not for
  /// Skeleton-of-Thought, which wakes stopped workers again).
  static int64_t serial_steps_bound(const SessionOptions& options);
  /// Upper bound of the KV cache (tokens, counted as Backend::kv_used_tokens with 64-token pages)
  /// a session of these options can fill with a prompt of prompt_tokens: the longest view
  /// (bounded by max_context, or the model's context, and by serial_steps_bound as by a budget,
  /// every serial step counted with a step opening as `codec` encodes the formatting's, the
  /// collaboration questions at their frequency, the method's own openings (SessionMethod::
  /// add_kv_need); kv_budget.h run_kv_tokens) plus the finisher's, the constant blocks and one
  /// partly filled page per live block.
  static int64_t kv_tokens_needed(const SessionOptions& options, const Formatting& formatting,
                                  const TextCodec& codec, const ModelConfig& config,
                                  int64_t prompt_tokens);

  /// The vocabulary mask used during collaborative reasoning: 1 = forbidden (vocab_size).
  const std::vector<uint8_t>& forbidden() const { return forbidden_; }
  /// Token ids held by block b as the session fed them (for dumps and tests).
  const std::vector<int32_t>& block_tokens(BlockId b) const;
  /// The history block (prompt + finished steps) and the constant layout blocks, once the
  /// prefill is planned (for dumps).
  BlockId history_block() const { return history_; }
  const ConstBlocks& const_blocks() const { return consts_; }
  /// The history block's forgotten ranges so far (sorted, merged; empty without a KV budget).
  const std::vector<TokenRange>& history_gaps() const { return history_gaps_; }
  /// Ids that end a worker's generation (sampling/stop_policy.h eos_id_union of the tokenizer's,
  /// the model config's and SessionOptions::extra_eos), and the ids forbidden during reasoning.
  const std::vector<int32_t>& eos_ids() const { return eos_; }
  const std::vector<int32_t>& forbidden_ids() const { return forbidden_ids_; }

 private:
  // The generation methods act on the session's workers and result (method.h).
  friend class HogwildMethod;
  friend class IndependentMethod;
  friend class SkeletonMethod;

  enum class Phase { idle, prefill, decode, finisher, done };
  struct Feed {
    int32_t token;
    BlockId block;
    int step;
    FeedRole role;
  };
  struct WorkerState {
    BlockId cur = -1;        // current step block (contiguous: whole output)
    int step = 0;            // 1-based number of the current step
    std::string step_bytes;  // bytes of the current step so far (prefix included)
    std::vector<Feed> feed;  // tokens to feed in the next forward
    bool active = true;
    int64_t generated = 0;
    bool collab_due = false;  // independent layout: its own collaboration check is due
    bool drain = false;       // skeleton: feed its waiting last token in the next forward, no row
    bool capped = false;      // stopped at max_tokens_per_worker (not by an end-of-sequence id)
  };
  // A finisher in progress (snapshot or final), over its own temporary block; the independent
  // layout runs one per worker without an answer, all in the same forwards.
  struct Finisher {
    LayoutState state;  // the run's blocks when it began
    int worker = -1;    // finisher_view's worker (-1: the whole run)
    BlockId block = -1;
    std::vector<int32_t> feed;  // tokens of the next forward
    FinisherResult result;
    int64_t produced = 0;
    bool final = false;
    bool done = false;
  };
  void build_forbidden();
  // The history block and the constant blocks (before the prefill's first forward).
  void create_blocks();
  BlockId const_block(const std::string& text);
  BlockId new_block();
  bool plan_prefill(SessionStep& step, int64_t max_prompt_tokens);
  bool plan_decode(SessionStep& step);
  // The parts of plan_decode: the pending notes' blocks and pseudo-writers; the tokens of the
  // longest view once the batch is fed; the rows' device sampling (host_logits when the picker
  // cannot describe every row).
  void plan_notes(SessionStep& step);
  int64_t longest_view(const ForwardBatch& batch) const;
  // The longest current step of a worker after this forward (tokens, its block's and the batch's).
  int64_t longest_step(const ForwardBatch& batch) const;
  void plan_device_sampling(SessionStep& step);
  void plan_finisher(SessionStep& step);
  void complete_prefill(SessionStep& step, StepReport& rep);
  void complete_decode(SessionStep& step, StepReport& rep);
  // The parts of complete_decode: the closing steps appended to the history (finishing order),
  // then the notes fed in this forward.
  void promote_closing(StepReport& rep);
  void append_notes();
  void complete_finisher(SessionStep& step, StepReport& rep);
  // After a decode step or a finisher: the next snapshot, the end of the run, or more decoding.
  void note_capped();
  void advance();
  void end_decoding();
  void begin_finisher(int64_t serial_step, bool final);
  // Once every finisher is done: the final results (then finalize) or the snapshot's (then more
  // decoding).
  void end_finishers();
  // An interrupt during a finisher: its blocks freed, stop_reason "interrupted", the run ended.
  void abandon_finishers();
  // Tokens in finisher f's view (its run's blocks and its own block as written so far).
  int64_t finisher_view_len(const Finisher& f) const;
  void finalize();
  void start_step(int w, bool first);
  // Opens worker w's step number step+1 in `block` with `text` (queued as step_start feeds).
  void open_step(int w, BlockId block, const std::string& text, bool collab_check);
  // Worker w's finished step closes (it joins the history after the next forward; not in the
  // contiguous and independent layouts) and its next step opens.
  void next_step(int w);
  // Worker w's step ended: counted and reported (on_step_end); returns the answer it holds.
  std::optional<std::string> step_ended(int w, StepReport& rep);
  // Worker w's answer ends the run for all; returns true (the run stops).
  bool end_with_answer(int w, const std::optional<std::string>& answer, StepReport& rep);
  // Handles worker w's sampled token by the session's rules and its method's (method.h); returns
  // true when the run must stop (answer found).
  bool on_sampled(int w, int32_t token, StepReport& rep);
  void count_unfed(int w, int32_t token, StepReport& rep);
  /// One more token generated by worker w, in every count (worker, result, report, session).
  void count_generated(int w, StepReport& rep);
  /// " or raise --max-context (up to the model's N)" when the context limit is below the model's,
  /// else "": the end of an error that the context limit caused.
  std::string raise_context_hint() const;
  LayoutState layout_state() const;
  void assign_indices(SessionStep& step);
  void record_tokens(const SessionStep& step);
  int32_t sample(int w, const float* row);
  bool is_eos(int32_t token) const;
  // KV budget: after a decode step's promotions, the window's scores and the forgetting.
  void forget_history(const SessionStep& step);
  // KV budget, evict with kv.redundancy_weight > 0 and the history (len tokens) over the budget:
  // Backend::key_redundancy of the history's forget_candidates, in their order; else {}.
  std::vector<float> history_redundancy(int64_t len) const;
  // KV budget, summarise-and-drop: after a decode step's promotions, the summarised steps
  // forgotten when the summary joined the history, and whether a summary is due.
  void summarise_history();
  // Forgets `drop` (sorted, disjoint, not yet forgotten) in the history block and reports it.
  void forget_ranges(std::vector<TokenRange> drop, ForgetEvent ev);
  // Worker w's summary step ends without joining the history (EOS, its token cap).
  void summary_abandoned(int w);

  Backend& be_;
  const TextCodec& codec_;
  const Formatting& fmt_;
  SessionOptions opt_;
  TokenPicker& picker_;
  SessionObserver* obs_ = nullptr;
  std::vector<uint8_t> forbidden_;
  std::vector<int32_t> forbidden_ids_;  // the ids forbidden_ marks (device sampling bans them)
  std::vector<int32_t> eos_;
  bool started_ = false;
  Phase phase_ = Phase::idle;

  std::vector<int32_t> prompt_;
  size_t prompt_fed_ = 0;      // prompt tokens planned so far (shared ones included)
  bool prefix_cache_ = false;  // use_prefix_cache
  BlockId history_ = -1;
  ConstBlocks consts_;
  std::vector<std::pair<std::string, BlockId>> const_texts_;  // distinct constant texts
  std::vector<BlockId> closing_;
  std::vector<std::pair<int, int>> closing_steps_;  // (worker, step) of closing_
  std::vector<WorkerState> workers_;
  std::vector<BlockId> owned_;                      // every live block the session created
  std::vector<std::vector<int32_t>> block_tokens_;  // by BlockId
  int64_t serial_ = 0;
  int64_t total_generated_ = 0;
  bool collab_due_ = false;
  bool stop_ = false;  // the run stops after the pending snapshots
  int64_t collab_every_ = 0;
  int64_t max_context_ = 0;
  size_t next_snapshot_ = 0;
  std::vector<std::pair<std::string, std::string>> notes_;      // (author, note text) not yet fed
  std::vector<std::pair<BlockId, std::string>> feeding_notes_;  // fed in the planned forward
  std::vector<Finisher> finishers_;
  // The generation method (method.h): plain Hogwild!, independent samples or Skeleton-of-Thought.
  std::unique_ptr<SessionMethod> method_;
  // KV budget (forgetting.h): history ranges never forgotten (prompt, step openings, notes), the
  // tokens each step block opened with (by BlockId), the scores' window and the gaps so far.
  std::vector<TokenRange> protected_;
  std::vector<int64_t> opening_len_;
  ScoreWindow scores_{1};
  std::vector<TokenRange> history_gaps_;
  // Summarise-and-drop: the notes' history ranges (kept), whether a summary step is due, the one
  // being written (worker, step, block, tokens generated), where the last one joined the history
  // in this serial step ({-1, -1}: none) and the steps promoted since the last summary.
  std::vector<TokenRange> note_ranges_;
  bool summary_due_ = false;
  int summary_worker_ = -1;
  int summary_step_ = 0;
  BlockId summary_block_ = -1;
  int64_t summary_generated_ = 0;
  TokenRange summary_joined_{-1, -1};
  int64_t summary_end_ = 0;  // history index after the last summary that joined (0: none)
  int64_t steps_since_summary_ = 0;
  std::chrono::steady_clock::time_point decode_start_;
  SessionResult result_;
};

}  // namespace hogwild
