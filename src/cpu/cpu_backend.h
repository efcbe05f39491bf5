// CPU reference backend: fp32 weights and activations, OpenBLAS GEMMs, attention over cache blocks
// on a thread pool (cpu/parallel.h). Implements the hogwild attention semantics of
// src/kv/backend.h / docs/ARCHITECTURE.md §2.
//
// Family differences are config flags only (ModelConfig): attention_bias (q/k/v bias: Qwen2),
// qk_norm (per-head RMSNorm of q and k before RoPE: Qwen3), head_dim, GQA
// (num_key_value_heads < num_attention_heads), partial_rotary_factor (Phi3), rope_scaling,
// tie_word_embeddings. Phi3's fused qkv/gate_up tensors are split by the loader. Qwen3-MoE layers
// (ModelConfig::is_moe_layer) run the sparse block of cpu/moe.h in place of the dense MLP.
#pragma once

#include <cstdint>
#include <vector>

#include "cpu/moe.h"
#include "cpu/rope.h"
#include "kv/backend.h"
#include "kv/block_table.h"
#include "kv/forward_plan.h"
#include "model/weights.h"

namespace hogwild::cpu {

/// Wall-clock seconds a CpuBackend spent per stage of its forwards, summed (set_profile). For
/// benchmarks; the stages follow the forward from top to bottom.
struct CpuProfile {
  int64_t forwards = 0;
  double plan = 0;       // validation, view plan, cache growth, embedding
  double norms = 0;      // RMSNorms (input, post-attention, final), residual adds, SwiGLU
  double qkv = 0;        // q/k/v projections (one skinny pass)
  double rope = 0;       // q/k norm, RoPE of the new keys, K/V writes
  double attention = 0;  // attention over the blocks of each view
  double o_proj = 0;
  double mlp = 0;      // gate/up (one skinny pass) and down projections; the MoE block
  double lm_head = 0;  // final projection onto the vocabulary
  double total = 0;
};

/// Bytes of weights a decode step reads: every layer tensor, the final norm and the output
/// projection (the embedding table when tied), fp32; not the embedding rows of the new tokens. In a
/// MoE layer: the router and num_experts_per_tok experts (what one row's step reads).
int64_t weight_bytes_per_step(const ModelWeights& w);

class CpuBackend : public Backend {
 public:
  /// Takes the weights. Throws hogwild::Error when a tensor's size does not match the config
  /// (naming the tensor) or the RoPE parameters are invalid.
  /// max_tokens: KV capacity in tokens, counted in pages of kPageTokens as the CUDA pool counts
  /// them (forward/append_block throw "KV cache full" beyond); 0 = unlimited (host memory).
  explicit CpuBackend(ModelWeights weights, int64_t max_tokens = 0);

  const ModelConfig& config() const override { return w_.config; }
  const ModelWeights& weights() const { return w_; }
  const RopeParams& rope() const { return rope_.params(); }

  BlockId new_block() override;
  void free_block(BlockId b) override;
  int64_t block_len(BlockId b) const override;
  void truncate_block(BlockId b, int64_t new_len) override;
  void append_block(BlockId dst, BlockId src) override;
  void forget_tokens(BlockId b, int64_t begin, int64_t end) override;
  bool can_forget() const override { return true; }
  const std::vector<std::vector<float>>& attention_scores() const override { return scores_; }
  std::vector<float> key_redundancy(
      BlockId b, const std::vector<std::pair<int64_t, int64_t>>& chunks) const override;
  bool measures_redundancy() const override { return true; }
  void read_block(BlockId b, int64_t layer, std::vector<float>& k,
                  std::vector<float>& v) const override;
  using Backend::forward;
  /// Backend::forward: the logits on the host, then the host draw (sampling/row_draw.h) when the
  /// batch draws.
  void forward(const ForwardBatch& batch, ForwardResult& out) override;
  /// The prefix cache (Backend): the blocks keep contiguous K/V (this backend's attention reads a
  /// block's keys as one array), so a cached page's K/V is also kept in a copy by page id, taken
  /// when cache_prefix caches it and dropped when the table evicts it; share_prefix copies the
  /// pages into the new block. What it saves here is the prefill's compute; the table counts the
  /// shared pages once, as the CUDA pool holds them.
  PrefixHit find_prefix(const int32_t* tokens, int64_t n) const override {
    return table_.find_prefix(tokens, n);
  }
  int64_t share_prefix(BlockId b, const int32_t* tokens, int64_t n) override;
  void cache_prefix(BlockId b, const int32_t* tokens, int64_t n) override;
  int64_t kv_unowned_tokens() const override { return table_.unowned_pages() * kPageTokens; }
  /// The block table, for tests (pages, reference counts, the prefix cache's state).
  const BlockTable& table() const { return table_; }

  int64_t kv_capacity_tokens() const override { return table_.num_pages() * kPageTokens; }
  int64_t kv_used_tokens() const override { return table_.used_pages() * kPageTokens; }
  int64_t live_blocks() const override { return table_.live_blocks(); }
  /// Tokens per page of the block table (the unit of kv_capacity_tokens).
  static constexpr int64_t kPageTokens = kKvPageTokens;

  /// Tokens held over all live blocks.
  int64_t cached_tokens() const;

  /// For benches and tests (as CudaBackend's): sets block b (empty) to `len` tokens of uniform
  /// [-1, 1) K/V in every layer, from `seed`. Throws hogwild::Error when b is unknown or not empty.
  void fill_block_random(BlockId b, int64_t len, uint64_t seed);
  /// weight_bytes_per_step(weights()).
  int64_t weight_bytes_per_step() const;
  /// Bytes of one token's K and V over all layers (fp32).
  int64_t kv_bytes_per_token() const;

  /// Adds the time of every later forward to *p, stage by stage (nullptr: stop). p must outlive
  /// its use.
  void set_profile(CpuProfile* p) { profile_ = p; }

  /// Test hook: while on, every forward keeps each MoE layer's routing (cpu/moe.h MoeTrace; in
  /// layer order, dense layers skipped) for last_routing().
  void record_routing(bool on) { record_routing_ = on, routing_.clear(); }
  const std::vector<MoeTrace>& last_routing() const { return routing_; }
  /// Test hook: the NEXT forward routes its rows to these experts (per MoE layer in layer order,
  /// (rows, num_experts_per_tok) each; cpu/moe.h moe_mlp's `forced`) instead of their own top-k,
  /// so that a comparison with another backend goes on past a near-tie that it decided the other
  /// way. forward throws hogwild::Error when the sizes do not match its batch.
  void force_routing(std::vector<std::vector<int32_t>> per_layer) {
    forced_routing_ = std::move(per_layer);
  }

 private:
  // The forward's logits rows ((want_logits rows, vocab_size) fp32) into `logits`.
  void compute_logits(const ForwardBatch& batch, std::vector<float>& logits);
  // K/V data of one cache block (its length, pages and liveness are in table_): per layer and
  // key/value head, K and V (len, head_dim) fp32, so that one head's keys are contiguous for
  // attention; keys rotated at block-local positions (scaled by attention_scaling once).
  struct Block {
    // [layer * num_key_value_heads + kv head] -> (len * head_dim)
    std::vector<std::vector<float>> k, v;
  };

  class Laps;           // per-stage timing of one forward (CpuProfile)
  struct Activations;   // one forward's activations
  class AttentionPass;  // one layer's attention (cpu_attention.cpp)

  void check_weights() const;
  // The steps of forward(), in order. begin_forward: checks and plans the batch, appends its
  // tokens, grows the blocks and clears the per-forward outputs (routing, scores).
  ForwardPlan begin_forward(const ForwardBatch& batch);
  // Layer l's input norm, q/k/v, K/V written, attention, o_proj, residual (a.x updated).
  void attention_block(const ForwardBatch& batch, const ForwardPlan& plan, int64_t l,
                       Activations& a, Laps& laps);
  // Rotates k (rows, kv heads * head_dim) at block-local positions and writes it and v into the
  // rows' blocks at layer l.
  void write_kv(const ForwardBatch& batch, const ForwardPlan& plan, int64_t l, float* k,
                const float* v);
  // q: (rows, heads * head_dim) -> out, the same shape: each row over its writer's view.
  void attention(const ForwardBatch& batch, const ForwardPlan& plan, int64_t layer, const float* q,
                 float* out);
  // Layer l's post-attention norm, MLP or MoE block (forced: that MoE layer's force_routing,
  // (rows, num_experts_per_tok), or nullptr), residual.
  void mlp_block(int64_t l, int64_t rows, Activations& a, const int32_t* forced, Laps& laps);
  // score_acc_'s per-thread maxima into scores_.
  void merge_scores();
  // Final norm and lm_head of the rows that want logits: logits (those rows, vocab).
  void lm_head(const ForwardBatch& batch, const std::vector<float>& x, std::vector<float>& logits,
               Laps& laps) const;

  ModelWeights w_;
  RopeTable rope_;
  BlockTable table_;
  std::vector<Block> blocks_;  // by BlockId
  // Copies of the cached pages' K/V (share_prefix reads them), by page id: [layer *
  // num_key_value_heads + kv head] -> (kPageTokens * head_dim) for K and for V; empty when the
  // page is not cached.
  std::vector<Block> page_kv_;
  CpuProfile* profile_ = nullptr;
  bool record_routing_ = false;
  std::vector<MoeTrace> routing_;
  std::vector<std::vector<int32_t>> forced_routing_;  // force_routing, for one forward
  // Attention scores of the last forward (attention_scores): per score block (len). While a
  // forward runs, score_acc_ holds each thread's maxima: [thread][score block] -> (len).
  std::vector<std::vector<float>> scores_;
  std::vector<std::vector<std::vector<float>>> score_acc_;
};

}  // namespace hogwild::cpu
