// CUDA backend: bf16 weights and activations, fp32 accumulation and fp32 residual stream, cuBLAS
// projections, the hogwild attention kernel over a paged KV pool (kv_layout.h), decode steps
// replayed as CUDA graphs. Implements hogwild::Backend (src/kv/backend.h); semantics as
// docs/ARCHITECTURE.md §2, checked against the CPU reference (tests/cuda/test_cuda_backend.cpp).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cuda/attention.h"
#include "cuda/kv_layout.h"
#include "cuda/moe.h"
#include "cuda/quant_gemm.h"
#include "cuda/rope.h"
#include "kv/backend.h"
#include "kv/block_table.h"
#include "kv/forward_plan.h"
#include "model/tensor_names.h"
#include "model/weights.h"

namespace hogwild::cuda {

class Gemm;
struct PlanInput;
struct ScoreBlockIn;

/// True when a CUDA device is usable (tests skip otherwise).
bool cuda_device_available();
/// Why the CUDA backend cannot run a model of config c (head_dim other than 64/128, a query/KV
/// head ratio it does not support, more experts or a larger top-k than cuda/moe.h handles,
/// act-order (GPTQ desc_act) experts), or "" when it can.
std::string cuda_unsupported(const ModelConfig& c);

struct CudaOptions {
  int device = 0;
  int64_t max_batch_tokens = 4096;    // tokens per forward (feed longer prompts in pieces)
  int64_t max_kv_tokens = 0;          // KV pool size in tokens; 0 = from free memory
  int64_t reserve_bytes = 1ll << 30;  // GPU memory left free when sizing the KV pool
  bool use_graphs = true;             // replay decode forwards (<= 64 tokens) as CUDA graphs
  int32_t max_entries = 8192;         // attention partial states per launch (split beyond)
  bool skinny_gemm = true;            // 1..8-row projections by skinny_gemm.h instead of cuBLAS
  int32_t attn_chunk = 0;       // keys per attention chunk (a multiple of 64); 0 = choose_chunk's
  bool show_progress = true;    // loading progress on stderr when it is a terminal
  bool record_routing = false;  // MoE: keep every layer's routing for last_routing() (tests)
};

/// bf16 device weights; one fused [q; k; v] and [gate; up] matrix per layer. A projection of a
/// quantized checkpoint (model/quant.h) is held packed in its QuantWeight (format != dense) and
/// its bf16 pointer is null.
struct DeviceLayer {
  __nv_bfloat16* input_layernorm = nullptr;           // (hidden_size)
  __nv_bfloat16* qkv_proj = nullptr;                  // ((heads + 2 kv_heads) head_dim, hidden)
  __nv_bfloat16* qkv_bias = nullptr;                  // ((heads + 2 kv_heads) head_dim) or null
  __nv_bfloat16* q_norm = nullptr;                    // (head_dim) or null
  __nv_bfloat16* k_norm = nullptr;                    // (head_dim) or null
  __nv_bfloat16* o_proj = nullptr;                    // (hidden, heads head_dim)
  __nv_bfloat16* post_attention_layernorm = nullptr;  // (hidden_size)
  __nv_bfloat16* gate_up_proj = nullptr;              // (2 intermediate, hidden)
  __nv_bfloat16* down_proj = nullptr;                 // (hidden, intermediate)
  QuantWeight qkv_q, o_q, gate_up_q, down_q;          // quant_gemm.h; format dense = unused
  // A MoE layer (ModelConfig::is_moe_layer; cuda/moe.h) holds these instead of the dense MLP.
  bool moe = false;
  __nv_bfloat16* router = nullptr;           // (num_experts, hidden): mlp.gate
  __nv_bfloat16* experts_gate_up = nullptr;  // (num_experts, 2 moe_intermediate, hidden)
  __nv_bfloat16* experts_down = nullptr;     // (num_experts, hidden, moe_intermediate)
  // Quantized experts (their bf16 pointers null): all experts' packed rows as one QuantWeight,
  // expert e's [gate_proj; up_proj] at rows e 2 moe_intermediate and its down_proj at e hidden.
  QuantWeight experts_gate_up_q, experts_down_q;
};

/// Forwards of up to this many tokens are captured as a CUDA graph per shape on first use and
/// replayed after (CudaBackend::execute; larger ones launch their kernels directly).
inline constexpr int64_t kGraphMaxTokens = 64;

class CudaBackend : public Backend {
 public:
  /// Uploads fp32 host weights as bf16 (a quantized model's weights, dequantized by load_model,
  /// become a bf16 model: config().quantization_config is cleared). Throws hogwild::Error when no
  /// GPU is usable, the model does not fit in GPU memory, or head_dim is not 64/128.
  explicit CudaBackend(const ModelWeights& weights, CudaOptions opt = {});
  /// Streams DIR's checkpoint (config.json + safetensors, bf16/f16/f32; checked like load_model)
  /// straight to the GPU as bf16, with no fp32 host copy (host memory: 128 MiB of pinned chunks).
  /// Quantized projections (AWQ/GPTQ int4, FP8) stay packed (quant_gemm.h), one layer's tensors
  /// at a time on the host.
  /// Throws hogwild::Error for the reasons of load_model (weights.h) and of the constructor above.
  explicit CudaBackend(const std::string& model_dir, CudaOptions opt = {});
  /// Random bf16 weights made on the GPU (uniform, scaled 1/sqrt(fan_in); norms near 1): for
  /// `hogwild bench` without files. With config.quantization_config set, the projections are
  /// random packed weights of that format (random_quant_weight).
  CudaBackend(const ModelConfig& config, uint64_t seed, CudaOptions opt = {});
  ~CudaBackend() override;

  const ModelConfig& config() const override { return cfg_; }
  BlockId new_block() override;
  void free_block(BlockId b) override;
  int64_t block_len(BlockId b) const override;
  void truncate_block(BlockId b, int64_t new_len) override;
  /// Step promotion; src's forgotten ranges join dst's (BlockTable::append_gaps).
  void append_block(BlockId dst, BlockId src) override;
  /// The KV budget (docs/ARCHITECTURE.md "Bounded shared memory"): forgotten tokens are cut out
  /// of the attention plan (AttnItem::key_from, PlanBlock::gaps); a forward whose batch names
  /// score_blocks also runs attention_scores.h after every layer's attention. attention_scores()
  /// synchronises the stream.
  void forget_tokens(BlockId b, int64_t begin, int64_t end) override;
  bool can_forget() const override { return true; }
  const std::vector<std::vector<float>>& attention_scores() const override;
  /// Backend::key_redundancy on the bf16 keys of the pool (key_redundancy.h), after the work
  /// queued on the stream; synchronises it.
  std::vector<float> key_redundancy(
      BlockId b, const std::vector<std::pair<int64_t, int64_t>>& chunks) const override;
  bool measures_redundancy() const override { return true; }
  void read_block(BlockId b, int64_t layer, std::vector<float>& k,
                  std::vector<float>& v) const override;
  using Backend::forward;
  /// Backend::forward. Without a draw the logits rows come to the host; with one, the banned ids
  /// and sampling.h sample_rows run on the device and only the token ids come back (and the rows,
  /// copied before the banned ids are applied, when the draw keeps its logits).
  void forward(const ForwardBatch& batch, ForwardResult& out) override;
  bool samples_on_device() const override { return true; }
  /// Forwards of up to kGraphMaxTokens tokens are captured as a CUDA graph per shape on first use
  /// (cuda_forward.cpp execute); 0 without graphs (CudaOptions::use_graphs).
  int64_t warmup_tokens() const override { return opt_.use_graphs ? kGraphMaxTokens : 0; }
  /// The forward with its logits left on the device: logits_device() holds (rows, vocab_size)
  /// fp32 until the next forward (for the bench). The batch must not draw. Returns the row count.
  int64_t forward_device(const ForwardBatch& batch);
  const float* logits_device() const { return logits_; }

  /// The prefix cache (Backend; kv/block_table.h): K/V are addressed by page in the pool, so
  /// a shared page is read in place by every block that holds it, and no copy is kept.
  PrefixHit find_prefix(const int32_t* tokens, int64_t n) const override {
    return table_.find_prefix(tokens, n);
  }
  int64_t share_prefix(BlockId b, const int32_t* tokens, int64_t n) override {
    return table_.share(b, tokens, n);
  }
  void cache_prefix(BlockId b, const int32_t* tokens, int64_t n) override {
    table_.publish(b, tokens, n);
    table_.take_evicted();  // nothing to free: the pool holds the only copy
  }
  int64_t kv_unowned_tokens() const override { return table_.unowned_pages() * kPageTokens; }

  /// KV pool capacity, use and free space, in tokens (page granularity: a block holds whole
  /// pages of kPageTokens).
  int64_t kv_capacity_tokens() const override { return layout_.num_pages * kPageTokens; }
  int64_t kv_used_tokens() const override { return kv_capacity_tokens() - kv_free_tokens(); }
  int64_t live_blocks() const override { return table_.live_blocks(); }
  int64_t kv_free_tokens() const { return table_.free_pages() * kPageTokens; }
  /// Throws hogwild::Error (with sizes and what to do) when `tokens` more tokens cannot be cached.
  /// `advice` ends the message (what the caller's user can change).
  void require_kv_tokens(
      int64_t tokens, const std::string& advice = "use fewer workers or a shorter context") const;
  /// For benches and tests: sets block b (empty) to `len` tokens of random K/V (all layers).
  void fill_block_random(BlockId b, int64_t len, uint64_t seed);
  /// Bytes of weights a decode step reads (every matrix and norm except the embedding table; a
  /// quantized projection counts its packed words, scales and zero points). A MoE layer counts
  /// its router and num_experts_per_tok experts (one row's reads); a step of many rows reads
  /// last_step_weight_bytes().
  int64_t weight_bytes_per_step() const;
  /// Bytes of one expert's matrices (gate, up, down) in bf16; 0 for a dense model.
  int64_t expert_bytes() const;
  /// Experts the last forward read, per MoE layer (the union over its rows; in layer order, dense
  /// layers skipped). Synchronises the stream.
  std::vector<int32_t> last_experts_touched() const;
  /// Bytes of weights the last forward read: weight_bytes_per_step() with each MoE layer's
  /// experts counted as last_experts_touched() says. Synchronises the stream.
  int64_t last_step_weight_bytes() const;
  /// Bytes of one token's K and V over all layers.
  int64_t kv_bytes_per_token() const;
  cudaStream_t stream() const { return stream_; }
  /// Test hook: the last forward's activations of the LAST layer as fp32, rows = its tokens:
  /// "qkv" (T, (heads + 2 kv_heads) head_dim: q and k after q/k norm, before RoPE) or
  /// "attn" (T, heads head_dim: attention output before o_proj).
  std::vector<float> debug_activation(const std::string& what, int64_t n_tokens) const;
  /// Test hook (CudaOptions::record_routing): the experts each row of the last forward chose,
  /// per MoE layer in layer order: (n_tokens, num_experts_per_tok) int32, each row ascending.
  /// Throws hogwild::Error when the backend was built without record_routing. Synchronises.
  std::vector<std::vector<int32_t>> last_routing(int64_t n_tokens) const;
  /// Test hook: FNV-1a hash of every weight tensor's bf16 bits, in DeviceLayer order (two
  /// backends hold the same weights iff the hashes agree, barring collisions). Reads all weights
  /// back to the host, one tensor at a time.
  uint64_t weight_fingerprint() const;

 private:
  struct Staging;  // per-forward index arrays (host pinned + device), see staging.h
  struct Scoring;  // the attention scores' plan and buffers, see scoring.h

  void init_common();
  void alloc_weights();
  void upload_weights(const ModelWeights& w);
  // Streams a checkpoint to the device (cuda_checkpoint.cpp; docs/CUDA.md "Memory").
  void load_checkpoint(const std::string& model_dir, bool show_progress);
  // Device destination of a dense tensor of the checkpoint (DeviceLayer's fused layouts); null
  // for a dense expert of a layer whose experts are kept quantized.
  __nv_bfloat16* weight_destination(const TensorSpec& s) const;
  void random_weights(uint64_t seed);
  // Quantized projections: the format of each of a layer's four, from cfg_.quantization_config.
  void set_quant_formats(DeviceLayer& L, int64_t layer) const;
  void keep_quant(QuantWeight& dst, const QuantWeightHost& h);
  void size_kv_pool();
  void run_layers(int64_t n_tokens, int64_t n_logits, int n_plans);
  // run_layers' parts (cuda_forward.cpp): a layer's attention block into attn_ (nc: the fused
  // norm chain of a skinny forward, else null), then the rest of the layer with the norms fused
  // into the projections (fused_layer_tail) or as kernels of their own (layer_tail).
  struct NormChain;
  void attention_block(const DeviceLayer& L, int64_t layer, int64_t n_tokens, int n_plans,
                       const AttnShape& shape, const NormChain* nc);
  void fused_layer_tail(const DeviceLayer& L, int64_t layer, int64_t n_tokens,
                        const __nv_bfloat16* next_norm, NormChain& nc);
  void layer_tail(const DeviceLayer& L, int64_t layer, int64_t n_tokens,
                  const __nv_bfloat16* next_norm);
  void moe_block(const DeviceLayer& L, int64_t layer, int64_t n_tokens, const SkinnyNormIn& norm,
                 const SkinnyResidualOut& res);
  int64_t prepare(const ForwardBatch& batch);  // validates, appends, plans, uploads; -> logit rows
  // prepare's parts (cuda_forward.cpp): the chunk length doubled until every row's partial
  // states fit a launch (-> the entries per row; undoes the appends and throws when gaps alone
  // exceed it); the index arrays and the attention plans of row ranges staged and uploaded.
  std::vector<int64_t> fit_chunk(PlanInput& pin, const ForwardPlan& plan,
                                 std::unordered_map<BlockId, int64_t>& appended);
  void stage_plans(const PlanInput& pin, const std::vector<std::pair<int64_t, int64_t>>& ranges,
                   const std::vector<int32_t>& ids, const std::vector<int32_t>& pos,
                   const std::vector<int32_t>& slot, const std::vector<int32_t>& logit_rows);
  // prepare's part for ForwardBatch::score_blocks (cuda_scores.cpp): plans and uploads the score
  // tiles of `blocks` over the rows of `pin`, zeroes the scores; nothing when blocks is empty.
  void prepare_scores(const PlanInput& pin, const std::vector<ScoreBlockIn>& blocks);
  // After execute: queues the copy of the scores to the host (attention_scores reads it).
  void fetch_scores();
  void execute(int64_t n_tokens, int64_t n_logits);
  // prepare + execute without the final synchronisation (a draw queues its sampling behind it
  // and synchronises once); -> logit rows.
  int64_t enqueue_forward(const ForwardBatch& batch);
  // forward's draw (cuda_sample.cpp): the forward, then banned ids and sampling on the device.
  void sample_on_device(const ForwardBatch& batch, ForwardResult& out);

  ModelConfig cfg_;
  CudaOptions opt_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<Gemm> gemm_;
  int64_t qkv_dim_ = 0;  // (heads + 2 kv_heads) * head_dim
  float attn_factor_ = 1.0f;

  // Weights.
  __nv_bfloat16* embed_tokens_ = nullptr;  // (vocab, hidden)
  std::vector<DeviceLayer> layers_;
  __nv_bfloat16* norm_ = nullptr;     // (hidden)
  __nv_bfloat16* lm_head_ = nullptr;  // (vocab, hidden); == embed_tokens_ when tied
  std::vector<void*> allocations_;
  bool quantized_ = false;         // some projection is a QuantWeight
  bool has_moe_ = false;           // some layer is a MoE layer
  void* quant_scratch_ = nullptr;  // quant_linear's scratch (gathered x, bf16 copy for prefill)

  // RoPE table and KV pool.
  float2* rope_table_ = nullptr;
  RopeTableView rope_;
  __nv_bfloat16* pool_ = nullptr;
  KvLayout layout_;
  BlockTable table_{0, kPageTokens};  // blocks, lengths, pages (kv/block_table.h)

  // Activations, sized for max_batch_tokens.
  float* x_ = nullptr;                // (T, hidden) residual stream
  __nv_bfloat16* h_ = nullptr;        // (T, hidden) normed
  __nv_bfloat16* qkv_ = nullptr;      // (T, qkv_dim)
  __nv_bfloat16* attn_ = nullptr;     // (T, heads head_dim)
  __nv_bfloat16* tmp_ = nullptr;      // (T, hidden)
  __nv_bfloat16* gate_up_ = nullptr;  // (T, 2 intermediate)
  __nv_bfloat16* act_ = nullptr;      // (T, intermediate)
  float* xl_ = nullptr;               // (T, hidden) rows that want logits
  // MoE layers (cuda/moe.h): router logits, the routing (shared by the layers, but for n_active:
  // one per layer, read by last_experts_touched), expert activations and outputs.
  float* router_logits_ = nullptr;    // (T, num_experts)
  MoeRoute moe_route_;                // for T rows
  int32_t* moe_active_ = nullptr;     // (num_hidden_layers) experts chosen in each layer
  int32_t* moe_record_ = nullptr;     // record_routing: (num_hidden_layers, T, k) chosen experts
  __nv_bfloat16* moe_act_ = nullptr;  // (T k, moe_intermediate)
  float* moe_y_ = nullptr;            // (T k, hidden)
  float* logits_ = nullptr;           // (logit_cap_, vocab)
  int64_t logit_cap_ = 0;
  float* part_o_ = nullptr;           // (max_entries, heads, head_dim)
  float2* part_ml_ = nullptr;         // (max_entries, heads)
  int32_t* promote_slots_ = nullptr;  // (2, promote_cap)
  int64_t promote_cap_ = 0;

  // Device sampling (cuda_sample.cpp): banned ids as last uploaded, per-row params and results.
  std::vector<int32_t> banned_host_;
  int32_t* banned_dev_ = nullptr;
  int64_t banned_cap_ = 0;
  void* sample_params_ = nullptr;  // (logit_cap_) SampleParams
  int32_t* sample_out_ = nullptr;  // (logit_cap_)

  std::unique_ptr<Staging> st_;
  std::unique_ptr<Scoring> sc_;
  // The last forward's attention scores, made from Scoring::scores_host when first asked for.
  mutable std::vector<std::vector<float>> scores_;
  mutable bool scores_ready_ = true;
  int sm_count_ = 0;
  std::vector<AttnPlanView> plans_;  // device views of this forward's plans
  // This forward's K/V append runs inside the attention partial kernel (AttnAppend): one plan,
  // and each block's new tokens are consecutive in the batch (AttnItem::fresh_row).
  bool fused_append_ = false;

  // Decode graphs keyed by (tokens, logit rows, item bound, fused append, score tile bound (0 =
  // no scores)).
  std::map<std::tuple<int64_t, int64_t, int32_t, bool, int32_t>, cudaGraphExec_t> graphs_;
  void drop_graphs();  // after a buffer a graph reads has moved
};

}  // namespace hogwild::cuda
