// The backend as the server's sequential engine hands it to one hogwild::Session at a time: it
// forwards every call to the real backend and adds the two things a server needs that Session
// does not do today (docs/SERVER.md "Live steering"):
//  - end_session() frees every cache block the session left (Session keeps its blocks until the
//    backend dies, which is right for `hogwild run` and wrong for a server);
//  - live steering: a queued note is fed into the session's history block at the start of the
//    next forward, by a pseudo-writer whose view is [history] (as the prefill writes the prompt),
//    so it reads as a step of its own after every finished step, and every worker's view holds it
//    from that serial step on (every view starts with the history block, layout.h). The history
//    block is the first block of the first view of the session's first forward (layout.h).
// A note is inserted only when every view of that forward still fits max_context with it; else
// it is dropped and reported (on_note with inserted = false).
// This is the stand-in for a Session::insert_note (docs/SERVER.md), which would feed the note in
// the same forward as the workers' tokens.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "model/backend.h"

namespace hogwild::server {

class SteeringBackend : public Backend {
 public:
  /// PRECONDITION: inner outlives this.
  explicit SteeringBackend(Backend& inner) : in_(inner) {}

  /// Starts tracking a new session's blocks. max_context: the session's limit on a view (tokens).
  /// on_note(inserted, n_tokens) is called for every queued note when it is inserted or dropped.
  void begin_session(int64_t max_context, std::function<void(bool, int64_t)> on_note);
  /// Frees every block the session still holds.
  void end_session();
  /// Queues note token ids for the next forward of the current session.
  void queue_note(std::vector<int32_t> ids) { pending_.push_back(std::move(ids)); }
  /// Live blocks and the tokens they hold.
  int64_t live_blocks() const { return static_cast<int64_t>(live_.size()); }
  int64_t cached_tokens() const;
  Backend& inner() { return in_; }

  const ModelConfig& config() const override { return in_.config(); }
  BlockId new_block() override;
  void free_block(BlockId b) override;
  int64_t block_len(BlockId b) const override { return in_.block_len(b); }
  void truncate_block(BlockId b, int64_t new_len) override { in_.truncate_block(b, new_len); }
  void append_block(BlockId dst, BlockId src) override { in_.append_block(dst, src); }
  void read_block(BlockId b, int64_t layer, std::vector<float>& k,
                  std::vector<float>& v) const override {
    in_.read_block(b, layer, k, v);
  }
  void forward(const ForwardBatch& batch, std::vector<float>& logits) override;
  bool samples_on_device() const override { return in_.samples_on_device(); }
  void forward_sample(const ForwardBatch& batch, const std::vector<int32_t>& banned,
                      const std::vector<RowSampling>& rows, std::vector<int32_t>& tokens) override;

 private:
  void insert_pending(const ForwardBatch& next);

  Backend& in_;
  std::set<BlockId> live_;
  BlockId history_ = -1;
  int64_t max_context_ = 0;
  std::vector<std::vector<int32_t>> pending_;
  std::function<void(bool, int64_t)> on_note_;
  std::vector<float> scratch_;
};

}  // namespace hogwild::server
