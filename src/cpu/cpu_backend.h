// CPU reference backend: fp32 weights and activations, OpenBLAS GEMMs, attention over cache blocks
// on a thread pool (cpu/parallel.h). Implements the hogwild attention semantics of
// src/model/backend.h / docs/DESIGN.md §2.
//
// Family differences are config flags only (ModelConfig): attention_bias (q/k/v bias: Qwen2),
// qk_norm (per-head RMSNorm of q and k before RoPE: Qwen3), head_dim, GQA
// (num_key_value_heads < num_attention_heads), partial_rotary_factor (Phi3), rope_scaling,
// tie_word_embeddings. Phi3's fused qkv/gate_up tensors are split by the loader.
#pragma once

#include "cpu/rope.h"
#include "model/backend.h"
#include "model/weights.h"

#include <cstdint>
#include <vector>

namespace hogwild::cpu {

class CpuBackend : public Backend {
 public:
  /// Takes the weights. Throws hogwild::Error when a tensor's size does not match the config
  /// (naming the tensor) or the RoPE parameters are invalid.
  /// max_tokens: total tokens over all blocks the cache may hold (new_block/forward throw beyond);
  /// 0 = unlimited (host memory is the limit).
  explicit CpuBackend(ModelWeights weights, int64_t max_tokens = 0);

  const ModelConfig& config() const override { return w_.config; }
  const ModelWeights& weights() const { return w_; }
  const RopeParams& rope() const { return rope_.params(); }

  BlockId new_block() override;
  void free_block(BlockId b) override;
  int64_t block_len(BlockId b) const override;
  void truncate_block(BlockId b, int64_t new_len) override;
  void append_block(BlockId dst, BlockId src) override;
  void read_block(BlockId b, int64_t layer, std::vector<float>& k,
                  std::vector<float>& v) const override;
  void forward(const ForwardBatch& batch, std::vector<float>& logits) override;
  /// forward, then the host draw of sampling/row_draw.h for every row.
  void forward_sample(const ForwardBatch& batch,
                      const std::vector<std::vector<int32_t>>& banned_sets,
                      const std::vector<RowSampling>& rows, std::vector<int32_t>& tokens) override;
  int64_t kv_capacity_tokens() const override { return max_tokens_; }
  int64_t kv_used_tokens() const override { return cached_tokens(); }
  int64_t live_blocks() const override;

  /// Tokens held over all live blocks.
  int64_t cached_tokens() const;

 private:
  // One cache block: per layer, K and V (len, num_key_value_heads, head_dim) fp32; keys rotated at
  // block-local positions (scaled by attention_scaling once).
  struct Block {
    bool live = false;
    int64_t len = 0;
    std::vector<std::vector<float>> k, v;  // (num_hidden_layers) x (len * kv_dim)
  };
  // Where a token of the batch sits: block index j, view position p, and its writer's occurrences.
  struct RowPlan {
    int64_t j = 0;      // block-local index in the target block
    int64_t p = 0;      // view position in the writer's view
  };
  struct Occurrence {
    BlockId block;
    int64_t offset;  // sum of post-append lengths of the blocks before it in the view
  };

  Block& block_ref(BlockId b, const char* what);
  const Block& block_ref(BlockId b, const char* what) const;
  void check_weights() const;
  void attention(const ForwardBatch& batch, const std::vector<RowPlan>& plan,
                 const std::vector<std::vector<Occurrence>>& occ, int64_t layer,
                 const float* q, float* out);

  ModelWeights w_;
  RopeTable rope_;
  int64_t max_tokens_ = 0;
  std::vector<Block> blocks_;
};

}  // namespace hogwild::cpu
