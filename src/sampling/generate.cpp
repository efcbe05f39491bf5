#include "sampling/generate.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"

namespace hogwild {

bool StopStrings::push(const std::string& piece) {
  if (stopped_) return true;
  const size_t before = text_.size();
  text_ += piece;
  size_t cut = std::string::npos;
  for (const std::string& s : stops_) {
    if (s.empty()) continue;
    // Only matches that end in the new piece can be new.
    const size_t from = before >= s.size() ? before - s.size() + 1 : 0;
    const size_t at = text_.find(s, from);
    if (at != std::string::npos) cut = std::min(cut, at);
  }
  if (cut == std::string::npos) return false;
  text_.resize(cut);
  stopped_ = true;
  return true;
}

size_t StopStrings::safe_length() const {
  if (stopped_) return text_.size();
  size_t hold = 0;  // longest suffix of text_ that is a proper prefix of some stop string
  for (const std::string& s : stops_)
    for (size_t n = std::min(s.size() - (s.empty() ? 0 : 1), text_.size()); n > hold; --n)
      if (text_.compare(text_.size() - n, n, s, 0, n) == 0) {
        hold = n;
        break;
      }
  return text_.size() - hold;
}

GenerateResult generate(Backend& be, std::span<const int32_t> prompt, Sampler& sampler,
                        const GenerateOptions& opt) {
  using clock = std::chrono::steady_clock;
  const ModelConfig& c = be.config();
  if (prompt.empty()) fail("generate: the prompt is empty; give at least one token");
  int64_t ctx = c.max_position_embeddings > 0 ? c.max_position_embeddings : INT64_MAX;
  if (opt.max_context > 0) ctx = std::min(ctx, opt.max_context);
  const std::string what = opt.max_context > 0 && opt.max_context == ctx
                               ? std::string("the context limit (--ctx-size)")
                               : std::string("the model's context (max_position_embeddings)");
  if (static_cast<int64_t>(prompt.size()) > ctx)
    fail("the prompt has {} tokens but {} is {} tokens; shorten the prompt", prompt.size(), what,
         ctx);
  // As `hogwild run`: a prompt that leaves no room for one new token is an error, not a 0-token
  // result (with max_new_tokens 0 the prompt's logits alone are asked for, which fit).
  if (opt.max_new_tokens > 0 && static_cast<int64_t>(prompt.size()) >= ctx)
    fail(
        "the prompt has {} tokens, which leaves no room to generate within {} of {} tokens; "
        "shorten the prompt (or pass -n 0 for the prompt's logits only)",
        prompt.size(), what, ctx);
  for (int32_t id : prompt)
    if (id < 0 || id >= c.vocab_size)
      fail("prompt token id {} is outside the model's vocabulary [0, {})", id, c.vocab_size);
  if (!opt.stop_strings.empty() && !opt.decode_piece)
    fail("stop strings need a tokenizer to decode the output; the model directory has none");

  GenerateResult r;
  r.prompt_tokens = static_cast<int64_t>(prompt.size());
  const BlockId blk = be.new_block();
  struct Free {
    Backend& be;
    BlockId b;
    ~Free() { be.free_block(b); }
  } free_block{be, blk};

  const bool dump = static_cast<bool>(opt.on_logits);
  std::vector<int32_t> seq(prompt.begin(), prompt.end());  // prompt ++ generated
  std::vector<float> logits;
  ForwardBatch fb;
  fb.views = {{blk}};
  for (size_t i = 0; i < prompt.size(); ++i)
    fb.tokens.push_back({prompt[i], 0, blk, dump || i + 1 == prompt.size()});
  auto t0 = clock::now();
  be.forward(fb, logits);
  r.prefill_seconds = std::chrono::duration<double>(clock::now() - t0).count();
  const int64_t V = c.vocab_size;
  if (dump) opt.on_logits(logits.data(), static_cast<int64_t>(prompt.size()));
  std::span<const float> last(logits.data() + logits.size() - V, V);

  StopStrings stops(opt.stop_strings);
  auto t1 = clock::now();
  r.stop_reason = StopReason::max_new_tokens;
  for (int64_t n = 0; n < opt.max_new_tokens; ++n) {
    if (static_cast<int64_t>(seq.size()) >= ctx) {  // the prompt alone fills the context
      r.stop_reason = StopReason::context_length;
      break;
    }
    const int32_t tok = sampler.sample(last, seq);
    seq.push_back(tok);
    r.generated.push_back(tok);
    if (opt.on_token) opt.on_token(tok);
    bool stop = false;
    if (opt.decode_piece && stops.push(opt.decode_piece(tok)) && !opt.stop_strings.empty()) {
      r.stop_reason = StopReason::stop_string;
      stop = true;
    }
    if (std::find(opt.eos_token_ids.begin(), opt.eos_token_ids.end(), tok) !=
        opt.eos_token_ids.end()) {
      r.stop_reason = StopReason::eos;
      stop = true;
    }
    if (!stop && static_cast<int64_t>(seq.size()) >= ctx) {
      // The sequence fills the context: this token can still be fed (at position ctx - 1) for
      // its logits row, but nothing after it.
      r.stop_reason = StopReason::context_length;
      stop = true;
    }
    if (!stop && opt.interrupt && opt.interrupt->load()) {
      r.stop_reason = StopReason::interrupted;
      stop = true;
    }
    const bool last_step = stop || n + 1 == opt.max_new_tokens;
    if (last_step && !dump) break;
    fb.tokens = {{tok, 0, blk, true}};
    be.forward(fb, logits);
    ++r.decode_forwards;
    if (dump) opt.on_logits(logits.data(), 1);
    last = std::span<const float>(logits.data(), V);
    if (last_step) break;
  }
  r.decode_seconds = std::chrono::duration<double>(clock::now() - t1).count();
  r.text = stops.text();
  return r;
}

}  // namespace hogwild
