#include "engine/plain.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "core/error.h"
#include "hogwild/formatting.h"

namespace hogwild {

int64_t plain_context(const ModelConfig& config, int64_t max_context) {
  int64_t ctx = config.max_position_embeddings > 0 ? config.max_position_embeddings : INT64_MAX;
  if (max_context > 0) ctx = std::min(ctx, max_context);
  return ctx;
}

void check_plain_prompt(const ModelConfig& config, const std::vector<int32_t>& prompt,
                        int64_t max_context, int64_t max_tokens) {
  if (prompt.empty()) fail("generate: the prompt is empty; give at least one token");
  const int64_t ctx = plain_context(config, max_context);
  const std::string what = max_context > 0 && max_context == ctx
                               ? std::string("the context limit (--ctx-size)")
                               : std::string("the model's context (max_position_embeddings)");
  if (static_cast<int64_t>(prompt.size()) > ctx)
    fail("the prompt has {} tokens but {} is {} tokens; shorten the prompt", prompt.size(), what,
         ctx);
  // As `hogwild run`: a prompt that leaves no room for one new token is an error, not a 0-token
  // result (with max_tokens 0 the prompt's logits alone are asked for, which fit).
  if (max_tokens > 0 && static_cast<int64_t>(prompt.size()) >= ctx)
    fail(
        "the prompt has {} tokens, which leaves no room to generate within {} of {} tokens; "
        "shorten the prompt (or pass -n 0 for the prompt's logits only)",
        prompt.size(), what, ctx);
  for (int32_t id : prompt)
    if (id < 0 || id >= config.vocab_size)
      fail("prompt token id {} is outside the model's vocabulary [0, {})", id, config.vocab_size);
}

SessionRequest make_plain_request(const ModelConfig& config, PlainRequest p) {
  if (p.max_tokens < 1) fail("a plain completion generates at least 1 token, got {}", p.max_tokens);
  check_plain_prompt(config, p.prompt, p.max_context, p.max_tokens);
  const int64_t ctx = plain_context(config, p.max_context);
  SessionRequest r;
  r.formatting = builtin_formatting("plain");
  SessionOptions& o = r.options;
  o.n_workers = 1;
  o.stop_on_answer = false;
  o.finisher = false;
  o.max_context = ctx == INT64_MAX ? 0 : ctx;
  o.max_tokens_per_worker = std::min(p.max_tokens, ctx - static_cast<int64_t>(p.prompt.size()));
  o.extra_eos = std::move(p.stop_ids);
  o.ignore_eos = p.ignore_eos;
  o.interrupt = p.interrupt;
  o.device_sampling = true;
  r.prompt = std::move(p.prompt);
  r.sampling = std::move(p.sampling);
  return r;
}

namespace {

// Records the drawn ids, hands them to the caller's on_token, and passes the forwards and the
// tokens on to the request's own observer.
class PlainObserver : public SessionObserver {
 public:
  PlainObserver(SessionObserver* next, const std::function<bool(int32_t)>& on_token)
      : next_(next), on_token_(on_token) {}
  void on_forward(const ForwardRecord& r) override {
    if (next_) next_->on_forward(r);
  }
  void on_token(const TokenEvent& t) override {
    generated.push_back(t.token);
    eos = t.eos;
    if (on_token_ && on_token_(t.token)) stop = true;
    if (next_) next_->on_token(t);
  }
  std::vector<int32_t> generated;
  bool eos = false;   // the last id drawn ended the completion
  bool stop = false;  // the caller asked to stop (a stop string)

 private:
  SessionObserver* next_;
  const std::function<bool(int32_t)>& on_token_;
};

}  // namespace

PlainResult run_plain(Engine& engine, SessionRequest request,
                      const std::function<bool(int32_t)>& on_token) {
  const int64_t ctx = plain_context(engine.backend().config(), request.options.max_context);
  const int64_t prompt_tokens = static_cast<int64_t>(request.prompt.size());
  PlainObserver obs(request.observer, on_token);
  request.observer = &obs;
  const SessionId id = engine.submit(std::move(request));
  while (!engine.finished(id)) {
    engine.step();
    if (obs.stop) engine.cancel(id);  // between steps: the token that completed it is the last
  }
  const std::string error = engine.error(id);
  if (!error.empty()) fail("{}", error);
  PlainResult r;
  r.session = engine.take(id);
  r.generated = std::move(obs.generated);
  // The order of the old rules and of vLLM: an end-of-sequence id wins over a stop string it
  // completed, which wins over the length.
  const StopReason s = r.session.stop_reason;
  if (obs.eos)
    r.stop_reason = StopReason::eos;
  else if (obs.stop)
    r.stop_reason = StopReason::stop_string;
  else if (s == StopReason::interrupted || s == StopReason::cancelled)
    r.stop_reason = StopReason::interrupted;
  else if (prompt_tokens + static_cast<int64_t>(r.generated.size()) >= ctx ||
           s == StopReason::max_context)
    r.stop_reason = StopReason::context_length;
  else
    r.stop_reason = StopReason::max_new_tokens;
  return r;
}

PlainResult generate_plain(Backend& backend, const TextCodec& codec, PlainRequest request,
                           const std::function<bool(int32_t)>& on_token) {
  const int64_t prompt = static_cast<int64_t>(request.prompt.size());
  SessionRequest r = make_plain_request(backend.config(), std::move(request));
  // The prompt in one forward: a lone request has nothing to share its forwards with.
  const int64_t chunk = std::max<int64_t>(512, prompt);
  Engine engine(backend, codec, {.max_batch_tokens = chunk, .prefill_chunk = chunk});
  return run_plain(engine, std::move(r), on_token);
}

double sequence_logits(Backend& be, const std::vector<int32_t>& seq, int64_t chunk,
                       const std::function<void(const float*, int64_t)>& on_rows) {
  HOGWILD_CHECK(chunk >= 1);
  const BlockId blk = be.new_block();
  struct Free {
    Backend& be;
    BlockId b;
    ~Free() { be.free_block(b); }
  } free_block{be, blk};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<float> logits;
  ForwardBatch fb;
  fb.views = {{blk}};
  for (size_t from = 0; from < seq.size(); from += static_cast<size_t>(chunk)) {
    const size_t to = std::min(seq.size(), from + static_cast<size_t>(chunk));
    fb.tokens.clear();
    for (size_t i = from; i < to; ++i)
      fb.tokens.push_back({seq[i], 0, blk, on_rows || i + 1 == seq.size()});
    be.forward(fb, logits);
    if (on_rows) on_rows(logits.data(), static_cast<int64_t>(to - from));
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace hogwild
