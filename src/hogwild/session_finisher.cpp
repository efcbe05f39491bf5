// The session's finisher (session.h): begun at a snapshot or at the end of the run, one
// temporary block per finisher (the workers the method names, SessionMethod::finisher_workers:
// one for the whole run, or one per worker without an answer, all in the same forwards), greedy
// decoding of the formatting's suffix continuation, then the result.
#include <algorithm>

#include "hogwild/answer.h"
#include "hogwild/method.h"
#include "hogwild/session.h"

namespace hogwild {

void Session::plan_finisher(SessionStep& step) {
  for (const Finisher& f : finishers_) {  // one view and one row per finisher still decoding
    if (f.done) continue;
    const int32_t writer = static_cast<int32_t>(step.batch.views.size());
    step.batch.views.push_back(finisher_view(f.state, f.block, f.worker));
    for (size_t j = 0; j < f.feed.size(); ++j) {
      step.batch.tokens.push_back({f.feed[j], writer, f.block, j + 1 == f.feed.size()});
      step.fed.push_back({f.feed[j], -1, 0, f.block, 0, FeedRole::finisher});
    }
    step.rows.push_back(-1);
  }
  // Greedy over the raw logits (no forbidden tokens): argmax, lowest id among ties.
  step.host_logits = false;
  step.sampling.assign(step.rows.size(), RowSampling{});
  assign_indices(step);
}

void Session::begin_finisher(int64_t serial_step, bool final) {
  finishers_.clear();
  const LayoutState state = layout_state();  // closing steps (last token not fed) read as history
  for (int w : method_->finisher_workers(*this)) {
    Finisher f;
    f.state = state;
    f.worker = w;
    f.block = new_block();
    f.feed = codec_.encode(fmt_.finisher.suffix);
    f.result.serial_step = serial_step;
    f.result.worker = w;
    f.final = final;
    // Its first forward would read past the context limit: it does not run.
    if (finisher_view_len(f) + static_cast<int64_t>(f.feed.size()) > max_context_) {
      be_.free_block(f.block);
      owned_.erase(std::find(owned_.begin(), owned_.end(), f.block));
      f.done = true;
      f.result.context_full = true;
    }
    finishers_.push_back(std::move(f));
  }
  phase_ = Phase::finisher;
  if (finishers_.empty()) {  // the method wants none (independent: every worker has its answer)
    if (final) return finalize();
    phase_ = Phase::decode;
    advance();
    return;
  }
  if (std::all_of(finishers_.begin(), finishers_.end(), [](auto& f) { return f.done; }))
    end_finishers();  // none fits the context
}

int64_t Session::finisher_view_len(const Finisher& f) const {
  int64_t len = 0;
  for (BlockId b : finisher_view(f.state, f.block, f.worker)) len += be_.block_len(b);
  return len;
}

void Session::abandon_finishers() {
  const bool final = finishers_.empty() || finishers_.front().final;
  for (Finisher& f : finishers_) {
    if (f.done) continue;  // its block is already freed
    be_.free_block(f.block);
    owned_.erase(std::find(owned_.begin(), owned_.end(), f.block));
  }
  finishers_.clear();
  result_.stop_reason = StopReason::interrupted;
  if (final) return finalize();  // decoding had ended
  end_decoding();                // a snapshot's finisher: decoding ends here (no final finisher)
}

void Session::complete_finisher(SessionStep& step, StepReport& rep) {
  rep.phase = StepReport::Phase::finisher;
  result_.finisher_seconds += step.forward_seconds;
  if (obs_ && !finishers_.empty()) {
    ForwardRecord rec{finishers_.front().result.serial_step,
                      step.batch.views,
                      step.fed,
                      {},
                      step.rows,
                      step.host_logits || step.keep_logits ? &step.logits : nullptr,
                      ForwardKind::finisher,
                      {},
                      !finishers_.front().final};
    obs_->on_finisher_forward(rec);
  }
  const int64_t vocab = be_.config().vocab_size;
  size_t row = 0;
  for (Finisher& f : finishers_) {
    if (f.done) continue;
    const int32_t best =
        step.host_logits
            ? static_cast<int32_t>(std::max_element(step.logits.begin() + row * vocab,
                                                    step.logits.begin() + (row + 1) * vocab) -
                                   (step.logits.begin() + row * vocab))
            : step.drawn[row];
    ++row;
    if (is_eos(best)) {
      f.done = true;
    } else {
      f.result.continuation += codec_.token_bytes(best);
      // Also at the context limit: the next forward would put a token past it.
      f.done = ++f.produced >= fmt_.finisher.max_tokens ||
               finisher_done(f.result.continuation, fmt_.answer.kind) ||
               finisher_view_len(f) + 1 > max_context_;
      f.feed = {best};
    }
    if (!f.done) continue;
    be_.free_block(f.block);
    owned_.erase(std::find(owned_.begin(), owned_.end(), f.block));
    f.result.answer = finish_answer(f.result.continuation, fmt_.answer.kind);
  }
  if (std::any_of(finishers_.begin(), finishers_.end(), [](auto& f) { return !f.done; })) return;
  end_finishers();
}

void Session::end_finishers() {
  std::vector<Finisher> done = std::move(finishers_);
  finishers_.clear();
  if (done.front().final) {
    for (Finisher& f : done) method_->take_final(result_, std::move(f.result));
    finalize();
    return;
  }
  for (Finisher& f : done) {
    result_.snapshots.push_back(std::move(f.result));
    if (obs_) obs_->on_snapshot(result_.snapshots.back());
  }
  phase_ = Phase::decode;
  advance();
}

}  // namespace hogwild
