// A Backend that hands every call to another one: the base of test backends that change one
// thing (tests/cuda/test_cuda_session.cpp BlindToOthers, tests/bench/
// test_batch_invariance_measure.cpp BatchDependent), which override forward only. forward_sample
// draws on the host from this backend's forward (sampling/row_draw.h), so the change reaches the
// sampled tokens too.
#pragma once

#include <vector>

#include "model/backend.h"
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
  void forward(const ForwardBatch& batch, std::vector<float>& logits) override {
    inner_.forward(batch, logits);
  }
  void forward_sample(const ForwardBatch& b, const std::vector<std::vector<int32_t>>& banned_sets,
                      const std::vector<RowSampling>& rows, std::vector<int32_t>& tokens) override {
    forward_sample_on_host(*this, b, banned_sets, rows, tokens);
  }
  int64_t kv_used_tokens() const override { return inner_.kv_used_tokens(); }
  int64_t live_blocks() const override { return inner_.live_blocks(); }

 protected:
  Backend& inner_;
};

}  // namespace hogwild::test
