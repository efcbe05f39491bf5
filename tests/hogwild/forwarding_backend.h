// A Backend that hands every call to another one: the base of test backends that change one
// thing (tests/cuda/test_cuda_session.cpp BlindToOthers, tests/bench/
// test_batch_invariance_measure.cpp BatchDependent), which override logits_of only. A forward's
// draw is made on the host from logits_of's rows (sampling/row_draw.h), so the change reaches the
// sampled tokens too.
#pragma once

#include <vector>

#include "kv/backend.h"
#include "sampling/row_draw.h"

namespace hogwild::test {

class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(Backend& inner) : inner_(inner) {}
  const ModelConfig& config() const override { return inner_.config(); }
  BlockId new_block() override { return inner_.new_block(); }
  void free_block(BlockId b) override { inner_.free_block(b); }
  int64_t block_len(BlockId b) const override { return inner_.block_len(b); }
  void truncate_block(BlockId b, int64_t n) override { inner_.truncate_block(b, n); }
  void append_block(BlockId dst, BlockId src) override { inner_.append_block(dst, src); }
  void read_block(BlockId b, int64_t layer, std::vector<float>& k,
                  std::vector<float>& v) const override {
    inner_.read_block(b, layer, k, v);
  }
  using Backend::forward;
  void forward(const ForwardBatch& batch, ForwardResult& out) final {
    check_row_sampling(batch);
    ForwardBatch plain = batch;
    plain.draw = {};
    logits_of(plain, out.logits);
    draw_on_host(batch, config().vocab_size, out);
  }
  /// The logits rows of a batch without a draw; the default asks the inner backend.
  virtual void logits_of(const ForwardBatch& batch, std::vector<float>& logits) {
    inner_.forward(batch, logits);
  }
  int64_t kv_used_tokens() const override { return inner_.kv_used_tokens(); }
  int64_t live_blocks() const override { return inner_.live_blocks(); }

 protected:
  Backend& inner_;
};

}  // namespace hogwild::test
