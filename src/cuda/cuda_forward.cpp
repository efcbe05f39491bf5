// CudaBackend::forward: validation and cache appends on the host, attention planning, one upload
// of the step's index arrays, then the layers (replayed as a CUDA graph for decode steps).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "core/error.h"
#include "cuda/attention_plan.h"
#include "cuda/attention_scores.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "cuda/elementwise.h"
#include "cuda/gemm.h"
#include "cuda/moe.h"
#include "cuda/norm.h"
#include "cuda/scoring.h"
#include "cuda/skinny_gemm.h"
#include "cuda/staging.h"

namespace hogwild::cuda {

namespace {

// Per batch token: its id, block-local position and pool slot (after the appends), the rows that
// want logits, and the first batch token appended to each block. `consecutive`: every block's new
// tokens are consecutive in the batch, so the append can be fused into the attention (key j <->
// token first + j - len).
struct TokenRows {
  std::vector<int32_t> ids, pos, slot, logit_rows;
  std::unordered_map<BlockId, int64_t> first_row;
  bool consecutive = true;
};

TokenRows token_rows(const ForwardBatch& batch, const ForwardPlan& plan, const BlockTable& table) {
  const int64_t T = static_cast<int64_t>(batch.tokens.size());
  TokenRows r;
  r.ids.resize(T), r.pos.resize(T), r.slot.resize(T);
  for (int64_t t = 0; t < T; ++t) {
    const TokenInput& in = batch.tokens[t];
    const int64_t j = plan.index[t];
    const auto [fr, first] = r.first_row.try_emplace(in.block, t);
    if (!first && batch.tokens[t - 1].block != in.block) r.consecutive = false;
    const std::vector<int32_t>& pages = table.pages(in.block);
    r.ids[t] = in.token_id;
    r.pos[t] = static_cast<int32_t>(j);
    r.slot[t] = pages[j / kPageTokens] * kPageTokens + static_cast<int32_t>(j % kPageTokens);
    if (in.want_logits) r.logit_rows.push_back(static_cast<int32_t>(t));
  }
  return r;
}

// The attention plan's input: the views with post-append offsets (from the plan), plan blocks
// deduplicated (block_index: BlockId -> index in pin.blocks), the rows' writers and positions.
// appended: tokens this forward adds, by block. total_keys: the keys of the distinct blocks.
PlanInput plan_input(const ForwardBatch& batch, const ForwardPlan& plan, const BlockTable& table,
                     const TokenRows& rows, const std::unordered_map<BlockId, int64_t>& appended,
                     std::unordered_map<BlockId, int32_t>& block_index, int64_t& total_keys) {
  const int64_t T = static_cast<int64_t>(batch.tokens.size());
  const int64_t n_workers = static_cast<int64_t>(batch.views.size());
  PlanInput pin;
  total_keys = 0;
  pin.views.resize(n_workers);
  for (int64_t w = 0; w < n_workers; ++w) {
    for (const ViewOccurrence& oc : plan.views[w]) {
      const BlockId b = oc.block;
      auto [it, fresh] = block_index.try_emplace(b, static_cast<int32_t>(pin.blocks.size()));
      if (fresh) {
        // Keys this forward appends are written by the kernel before the attention, or by the
        // attention itself (fused append: fresh_row names the batch token of key fresh_from).
        const auto ad = appended.find(b);
        const int64_t added = ad == appended.end() ? 0 : ad->second;
        const int64_t len = table.len(b);
        const auto fr = rows.first_row.find(b);
        // Forgotten tokens (the KV budget) are cut out of the block's items.
        pin.blocks.push_back(PlanBlock{len, &table.pages(b), len - added,
                                       fr == rows.first_row.end() ? -1 : fr->second,
                                       plan.gaps_of(b)});
        total_keys += len;
      }
      pin.views[w].push_back(PlanOccurrence{it->second, oc.offset});
    }
  }
  pin.row_worker.resize(T);
  pin.row_pos.resize(T);
  for (int64_t t = 0; t < T; ++t) {
    pin.row_worker[t] = batch.tokens[t].worker;
    pin.row_pos[t] = plan.position[t];
  }
  return pin;
}

// Rows [first, second) per attention launch: consecutive rows whose entries (counts, per row)
// fit `cap` partial states together.
std::vector<std::pair<int64_t, int64_t>> row_ranges(const std::vector<int64_t>& counts,
                                                    int64_t cap) {
  const int64_t T = static_cast<int64_t>(counts.size());
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (int64_t r0 = 0; r0 < T;) {
    int64_t r1 = r0, acc = 0;
    while (r1 < T && acc + counts[r1] <= cap) acc += counts[r1++];
    ranges.emplace_back(r0, r1);
    r0 = r1;
  }
  return ranges;
}

// The forward's index arrays, written into the staging buffer's host half and copied to the same
// offsets of its device half as one batch of copies (one call instead of ~10).
class StagedCopies {
 public:
  explicit StagedCopies(int32_t* host, int32_t* dev) : host_(host), dev_(dev) {}
  // n_ints int32 values from src at offset `at` (ints) of the staging buffer.
  void put(int64_t at, const void* src, int64_t n_ints) {
    if (n_ints == 0) return;
    std::memcpy(host_ + at, src, n_ints * 4);
    dsts_.push_back(dev_ + at);
    srcs_.push_back(host_ + at);
    sizes_.push_back(static_cast<size_t>(n_ints) * 4);
  }
  // Queues the copies on `stream` (one cudaMemcpyAsync each on a driver without batched copies).
  void submit(cudaStream_t stream) {
    if (dsts_.empty()) return;
    cudaMemcpyAttributes attr{};
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    size_t attr_idx = 0;
    if (cudaMemcpyBatchAsync(dsts_.data(), srcs_.data(), sizes_.data(), dsts_.size(), &attr,
                             &attr_idx, 1, stream) == cudaSuccess)
      return;
    (void)cudaGetLastError();
    for (size_t i = 0; i < dsts_.size(); ++i)
      HOGWILD_CUDA_CHECK(
          cudaMemcpyAsync(dsts_[i], srcs_[i], sizes_[i], cudaMemcpyHostToDevice, stream));
  }

 private:
  int32_t* host_;
  int32_t* dev_;
  std::vector<void*> dsts_;
  std::vector<const void*> srcs_;
  std::vector<size_t> sizes_;
};
}  // namespace

int64_t CudaBackend::prepare(const ForwardBatch& batch) {
  const int64_t T = static_cast<int64_t>(batch.tokens.size());
  if (T > opt_.max_batch_tokens)
    fail(
        "a forward of {} tokens exceeds the CUDA backend's batch limit of {}; feed the prompt in "
        "pieces or raise max_batch_tokens",
        T, opt_.max_batch_tokens);
  // Checks and the view rule (kv/forward_plan.h), before anything changes.
  const ForwardPlan plan = plan_forward(batch, table_, cfg_, rope_.n_positions);
  if (plan.logit_rows > logit_cap_)
    fail(
        "forward: {} rows want logits, the CUDA backend returns at most {} per forward; ask for "
        "fewer rows",
        plan.logit_rows, logit_cap_);
  apply_appends(plan, table_);

  const TokenRows rows = token_rows(batch, plan, table_);
  std::unordered_map<BlockId, int64_t> appended;  // tokens this forward adds, by block
  for (const auto& [b, len] : plan.grown) appended[b] = 0;
  for (const TokenInput& t : batch.tokens) ++appended[t.block];
  std::unordered_map<BlockId, int32_t> block_index;
  int64_t total_keys = 0;
  PlanInput pin = plan_input(batch, plan, table_, rows, appended, block_index, total_keys);
  pin.group = static_cast<int32_t>(cfg_.num_attention_heads / cfg_.num_key_value_heads);
  pin.kv_heads = static_cast<int32_t>(cfg_.num_key_value_heads);
  // Fused append (decode-size forwards, full-width RoPE): a block's new keys then lie in an
  // item's first tiles.
  pin.split_fresh = rows.consecutive && T <= kGraphMaxTokens && rope_.rotary_dim == cfg_.head_dim;
  if (sm_count_ == 0)
    HOGWILD_CUDA_CHECK(
        cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, opt_.device));
  // One wave of partial-kernel CTAs (16 warps and 155 KB (head_dim 128) / 85 KB (64) of shared
  // memory: 1 CTA per SM); a second, mostly idle wave cost ~5 us per layer (measured; that run
  // is not in docs/PERFLOG.md, whose f3efd3f entry shows a like cost: 8 workers at 8k 5.17
  // against 5.00 ms when grouping added a wave).
  const int32_t resident = sm_count_ * 9 / 10;
  pin.resident_ctas = sm_count_;  // the partial kernel runs one CTA per SM
  pin.chunk =
      opt_.attn_chunk > 0
          ? opt_.attn_chunk
          : choose_chunk(total_keys, T, static_cast<int32_t>(cfg_.num_key_value_heads), resident);
  const std::vector<int64_t> counts = fit_chunk(pin, plan, appended);

  std::vector<ScoreBlockIn> score_blocks;  // the attention scores of the KV budget
  for (BlockId b : batch.score_blocks) {
    const auto at = block_index.find(b);
    score_blocks.push_back({at == block_index.end() ? -1 : at->second, table_.len(b)});
  }
  prepare_scores(pin, score_blocks);
  const auto ranges = row_ranges(counts, st_->ecap);
  fused_append_ = pin.split_fresh && ranges.size() == 1;
  if (static_cast<int>(ranges.size()) > st_->n_slots) {
    st_->alloc(static_cast<int>(ranges.size()));
    drop_graphs();
  }
  stage_plans(pin, ranges, rows.ids, rows.pos, rows.slot, rows.logit_rows);
  return static_cast<int64_t>(rows.logit_rows.size());
}

std::vector<int64_t> CudaBackend::fit_chunk(PlanInput& pin, const ForwardPlan& plan,
                                            std::unordered_map<BlockId, int64_t>& appended) {
  const Staging& st = *st_;
  for (;;) {
    std::vector<int64_t> counts = row_entry_counts(pin);
    const int64_t worst = *std::max_element(counts.begin(), counts.end());
    if (worst <= st.ecap) return counts;
    if (pin.chunk >= plan.max_position + 1) {  // one chunk per block: only gaps split it more
      for (const auto& [b, len] : plan.grown) table_.truncate(b, len - appended[b]);  // undo
      fail(
          "forward: a row attends to {} separate key ranges (blocks cut by forgotten tokens), "
          "more than the {} partial states of an attention launch; forget in larger chunks or "
          "raise max_entries",
          worst, st.ecap);
    }
    pin.chunk *= 2;
  }
}

void CudaBackend::stage_plans(const PlanInput& pin,
                              const std::vector<std::pair<int64_t, int64_t>>& ranges,
                              const std::vector<int32_t>& ids, const std::vector<int32_t>& pos,
                              const std::vector<int32_t>& slot,
                              const std::vector<int32_t>& logit_rows) {
  Staging& st = *st_;
  const int64_t T = static_cast<int64_t>(ids.size());
  StagedCopies up(st.host, st.dev);
  up.put(0, ids.data(), T);  // header arrays first, then each plan into its slot
  up.put(st.tcap, pos.data(), T);
  up.put(2 * st.tcap, slot.data(), T);
  up.put(3 * st.tcap, logit_rows.data(), static_cast<int64_t>(logit_rows.size()));
  plans_.clear();
  for (size_t k = 0; k < ranges.size(); ++k) {
    const HostPlan hp = build_plan(pin, ranges[k].first, ranges[k].second);
    const int64_t base = st.slot_base(static_cast<int>(k));
    const int64_t o_items = base, o_n = o_items + kAttnItemInts * st.ecap, o_pages = o_n + 4;
    const int64_t o_pairs = o_pages + st.pcap, o_ptr = o_pairs + 2 * st.ecap;
    const int64_t o_ent = o_ptr + st.tcap + 1, o_units = o_ent + st.ecap;
    const int32_t n_units = static_cast<int32_t>(hp.units.size());
    HOGWILD_CHECK(hp.n_entries <= st.ecap && static_cast<int64_t>(hp.pages.size()) <= st.pcap &&
                  n_units <= st.ucap);
    up.put(o_items, hp.items.data(), kAttnItemInts * static_cast<int64_t>(hp.items.size()));
    up.put(o_n, &n_units, 1);
    up.put(o_units, hp.units.data(), kAttnUnitInts * static_cast<int64_t>(n_units));
    up.put(o_pages, hp.pages.data(), static_cast<int64_t>(hp.pages.size()));
    up.put(o_pairs, hp.pairs.data(), 2 * static_cast<int64_t>(hp.pairs.size()));
    up.put(o_ptr, hp.row_entry_ptr.data(), T + 1);
    up.put(o_ent, hp.row_entries.data(), static_cast<int64_t>(hp.row_entries.size()));
    AttnPlanView v;
    v.items = reinterpret_cast<const AttnItem*>(st.dev + o_items);
    v.units = reinterpret_cast<const AttnUnit*>(st.dev + o_units);
    v.n_units = st.dev + o_n;
    v.max_units = n_units;
    v.pages = st.dev + o_pages;
    v.pairs = reinterpret_cast<const AttnPair*>(st.dev + o_pairs);
    v.row_entry_ptr = st.dev + o_ptr;
    v.row_entries = st.dev + o_ent;
    v.row_begin = static_cast<int32_t>(ranges[k].first);
    v.n_rows = static_cast<int32_t>(ranges[k].second - ranges[k].first);
    v.max_entries = static_cast<int32_t>(st.ecap);
    v.part_o = part_o_;
    v.part_ml = part_ml_;
    v.lse = sc_->active ? sc_->lse : nullptr;
    plans_.push_back(v);
  }
  up.submit(stream_);
}

// A MoE layer's MLP over h_ (cuda/moe.h): router, routing, the chosen experts, their weighted sum.
// norm.ss set: h_ is the fused norm's x_res * w (skinny_gemm.h), and the sum goes into the
// residual stream as `res` says (h_ = the next norm's input); else the sum is left in tmp_.
void CudaBackend::moe_block(const DeviceLayer& L, int64_t l, int64_t T, const SkinnyNormIn& norm,
                            const SkinnyResidualOut& res) {
  const ModelConfig& c = cfg_;
  const int64_t H = c.hidden_size, Ex = c.num_experts, k = c.num_experts_per_tok;
  const int64_t Im = c.moe_intermediate_size;
  if (norm.ss)
    skinny_linear(h_, L.router, nullptr, nullptr, router_logits_, T, H, Ex, stream_, norm);
  else
    gemm_->linear_f32(h_, L.router, router_logits_, T, H, Ex);
  MoeRoute r = moe_route_;
  r.n_active = moe_active_ + l;
  if (moe_record_) r.expert = moe_record_ + l * opt_.max_batch_tokens * k;  // kept per layer
  moe_route(router_logits_, T, Ex, k, c.norm_topk_prob, r, stream_);
  if (L.experts_gate_up_q.format != WeightFormat::dense)
    moe_expert_swiglu(h_, L.experts_gate_up_q, r, moe_act_, T, H, Im, Ex, k, stream_, norm);
  else
    moe_expert_swiglu(h_, L.experts_gate_up, r, moe_act_, T, H, Im, Ex, k, stream_, norm);
  if (L.experts_down_q.format != WeightFormat::dense)
    moe_expert_down(moe_act_, L.experts_down_q, r, moe_y_, T, H, Im, Ex, k, stream_);
  else
    moe_expert_down(moe_act_, L.experts_down, r, moe_y_, T, H, Im, Ex, k, stream_);
  if (norm.ss)
    moe_combine_residual(moe_y_, r, T, H, k, res, h_, stream_);
  else
    moe_combine(moe_y_, r, tmp_, T, H, k, stream_);
}

// The fused residual add + RMSNorm chain of a skinny forward (skinny_gemm.h SkinnyNormIn): o-proj
// / down add to x_ and leave h_ = x_ * w and the rows' sums of squares in a ring slot; qkv /
// gate-up scale their products by the rows' 1 / RMS. Producer i accumulates into slot i % 3 and
// zeroes slot (i + 1) % 3; a consumer reads the last producer's slot.
struct CudaBackend::NormChain {
  float* ring = nullptr;
  float* x = nullptr;  // the fp32 residual stream (x_)
  int64_t hidden = 0;
  float eps = 0;
  int producer = 0;
  float* slot(int i) const { return ring + (i % 3) * kSkinnyMaxRows; }
  SkinnyResidualOut residual_out(const bf16* next_norm) {
    SkinnyResidualOut r{x, next_norm, slot(producer), slot(producer + 1)};
    ++producer;
    return r;
  }
  SkinnyNormIn norm_in() const { return SkinnyNormIn{slot(producer - 1), hidden, eps}; }
};

void CudaBackend::run_layers(int64_t T, int64_t n_logits, int n_plans) {
  const ModelConfig& c = cfg_;
  const int64_t H = c.hidden_size, I = c.intermediate_size, hd = c.head_dim;
  const int64_t nh = c.num_attention_heads;
  const float eps = static_cast<float>(c.rms_norm_eps);
  const int32_t* ids = st_->dev;
  const int32_t* logit_rows = st_->dev + 3 * st_->tcap;
  AttnShape shape;
  shape.num_attention_heads = static_cast<int32_t>(nh);
  shape.num_key_value_heads = static_cast<int32_t>(c.num_key_value_heads);
  shape.head_dim = static_cast<int32_t>(hd);
  shape.q_token_stride = qkv_dim_;
  shape.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  shape.attn_factor = attn_factor_;

  // Skinny batches fuse each residual add + RMSNorm into the projections around it (NormChain).
  // Quantized projections take the same fused path through the skinny kernel's quantized variant;
  // a MoE block consumes the norm in its router and expert SwiGLU and produces the next one in its
  // combine.
  const bool fused =
      gemm_->use_skinny(T, H) && gemm_->use_skinny(T, nh * hd) && gemm_->use_skinny(T, I);
  NormChain nc{gemm_->norm_ring(), x_, H, eps};

  embedding(embed_tokens_, ids, T, H, c.vocab_size, x_, stream_);
  if (fused)
    HOGWILD_CUDA_CHECK(cudaMemsetAsync(nc.ring, 0, 3 * kSkinnyMaxRows * sizeof(float), stream_));
  rmsnorm(x_, layers_[0].input_layernorm, h_, T, H, eps, stream_);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const DeviceLayer& L = layers_[l];
    attention_block(L, l, T, n_plans, shape, fused ? &nc : nullptr);
    const bf16* next_norm = l + 1 < c.num_hidden_layers ? layers_[l + 1].input_layernorm : norm_;
    if (fused)
      fused_layer_tail(L, l, T, next_norm, nc);
    else
      layer_tail(L, l, T, next_norm);
  }
  // final norm and lm_head on the rows that want logits
  gather_rows(x_, logit_rows, n_logits, H, xl_, stream_);
  rmsnorm(xl_, norm_, h_, n_logits, H, eps, stream_);
  gemm_->linear_f32(h_, lm_head_, logits_, n_logits, H, c.vocab_size);
}

void CudaBackend::attention_block(const DeviceLayer& L, int64_t l, int64_t T, int n_plans,
                                  const AttnShape& shape, const NormChain* nc) {
  const ModelConfig& c = cfg_;
  const int64_t H = c.hidden_size, hd = c.head_dim;
  const int64_t nh = c.num_attention_heads, kvh = c.num_key_value_heads;
  const float eps = static_cast<float>(c.rms_norm_eps);
  const int32_t* pos = st_->dev + st_->tcap;
  const int32_t* slot = st_->dev + 2 * st_->tcap;
  bf16* layer_pool = pool_ + l * layout_.layer_elems();
  // qkv (+ bias; the input norm's 1 / RMS fused after layer 0), (q/k norm), K/V append with
  // RoPE, attention into attn_
  const bool qkv_quant = L.qkv_q.format != WeightFormat::dense;
  if (nc && qkv_quant)
    skinny_quant_linear(h_, L.qkv_q, L.qkv_bias, qkv_, T, quant_scratch_, stream_,
                        l > 0 ? nc->norm_in() : SkinnyNormIn{});
  else if (qkv_quant)
    quant_linear(*gemm_, h_, L.qkv_q, L.qkv_bias, qkv_, T, quant_scratch_, stream_);
  else if (nc && l > 0)
    skinny_linear(h_, L.qkv_proj, L.qkv_bias, qkv_, nullptr, T, H, qkv_dim_, stream_,
                  nc->norm_in());
  else
    gemm_->linear(h_, L.qkv_proj, qkv_, T, H, qkv_dim_, L.qkv_bias);
  if (fused_append_) {  // q/k norm + K/V append inside the attention (one launch less)
    AttnAppend app;
    app.pool = layer_pool;
    app.w_q = L.q_norm;
    app.w_k = L.k_norm;
    app.eps = eps;
    app.k_col = nh * hd;
    app.v_col = (nh + kvh) * hd;
    hogwild_attention(qkv_, shape, layer_pool, layout_, rope_, plans_[0], attn_, stream_, &app);
    if (sc_->active)  // q in qkv_ is before its q-norm here
      layer_attention_scores(qkv_, shape, layer_pool, layout_, rope_, L.q_norm, eps, sc_->view,
                             stream_);
    return;
  }
  if (L.q_norm)
    qk_norm_kv_append(qkv_, qkv_dim_, nh, T, L.q_norm, L.k_norm, eps, pos, slot, layer_pool,
                      layout_, rope_, attn_factor_, stream_);
  else
    kv_append(qkv_, qkv_dim_, nh * hd, (nh + kvh) * hd, T, pos, slot, layer_pool, layout_, rope_,
              attn_factor_, stream_);
  for (int k = 0; k < n_plans; ++k)
    hogwild_attention(qkv_, shape, layer_pool, layout_, rope_, plans_[k], attn_, stream_);
  if (sc_->active)
    layer_attention_scores(qkv_, shape, layer_pool, layout_, rope_, nullptr, eps, sc_->view,
                           stream_);
}

void CudaBackend::fused_layer_tail(const DeviceLayer& L, int64_t l, int64_t T,
                                   const bf16* next_norm, NormChain& nc) {
  const int64_t H = cfg_.hidden_size, I = cfg_.intermediate_size;
  const int64_t nh_hd = cfg_.num_attention_heads * cfg_.head_dim;
  if (L.o_q.format != WeightFormat::dense)
    skinny_quant_residual(attn_, L.o_q, T, nc.residual_out(L.post_attention_layernorm), h_,
                          quant_scratch_, stream_);
  else
    skinny_residual(attn_, L.o_proj, T, nh_hd, H, nc.residual_out(L.post_attention_layernorm), h_,
                    stream_);
  if (L.moe) {
    // two statements: the consumer's slot is read before the next producer takes its own
    // (the order in which a call's arguments are evaluated is unspecified)
    const SkinnyNormIn norm = nc.norm_in();
    moe_block(L, l, T, norm, nc.residual_out(next_norm));
    return;
  }
  // mlp block: gate/up with SwiGLU, down (each with its norm half fused)
  if (L.gate_up_q.format != WeightFormat::dense)
    skinny_quant_swiglu(h_, L.gate_up_q, act_, T, quant_scratch_, stream_, nc.norm_in());
  else
    skinny_swiglu(h_, L.gate_up_proj, act_, T, H, I, stream_, nc.norm_in());
  if (L.down_q.format != WeightFormat::dense)
    skinny_quant_residual(act_, L.down_q, T, nc.residual_out(next_norm), h_, quant_scratch_,
                          stream_);
  else
    skinny_residual(act_, L.down_proj, T, I, H, nc.residual_out(next_norm), h_, stream_);
}

void CudaBackend::layer_tail(const DeviceLayer& L, int64_t l, int64_t T, const bf16* next_norm) {
  const ModelConfig& c = cfg_;
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  const int64_t nh_hd = c.num_attention_heads * c.head_dim;
  const float eps = static_cast<float>(c.rms_norm_eps);
  if (L.o_q.format != WeightFormat::dense)
    quant_linear(*gemm_, attn_, L.o_q, nullptr, tmp_, T, quant_scratch_, stream_);
  else
    gemm_->linear(attn_, L.o_proj, tmp_, T, nh_hd, H);
  add_rmsnorm(x_, tmp_, L.post_attention_layernorm, h_, T, H, eps, stream_);
  // mlp block: gate/up with SwiGLU, down (a MoE block leaves the experts' weighted sum in tmp_);
  // residual add fused with the next layer's input norm
  if (L.moe) {
    moe_block(L, l, T, {}, {});
  } else {
    if (L.gate_up_q.format != WeightFormat::dense) {
      quant_linear(*gemm_, h_, L.gate_up_q, nullptr, gate_up_, T, quant_scratch_, stream_);
      swiglu(gate_up_, act_, T, I, stream_);
    } else {
      gemm_->linear_swiglu(h_, L.gate_up_proj, gate_up_, act_, T, H, I);
    }
    if (L.down_q.format != WeightFormat::dense)
      quant_linear(*gemm_, act_, L.down_q, nullptr, tmp_, T, quant_scratch_, stream_);
    else
      gemm_->linear(act_, L.down_proj, tmp_, T, I, H);
  }
  if (l + 1 < c.num_hidden_layers)
    add_rmsnorm(x_, tmp_, next_norm, h_, T, H, eps, stream_);
  else
    add_residual(x_, tmp_, T * H, stream_);
}

void CudaBackend::execute(int64_t T, int64_t n_logits) {
  const int n_plans = static_cast<int>(plans_.size());
  if (!opt_.use_graphs || n_plans != 1 || T > kGraphMaxTokens) {
    run_layers(T, n_logits, n_plans);
    return;
  }
  // Graph keyed by shape; the attention grid is an upper bound on the unit count (the kernel reads
  // the true count from device memory), so a graph serves many steps as views grow.
  // Every partial-kernel CTA past the true count still takes a whole SM (16 warps, 64K registers)
  // for its launch, and the next kernel starts only when all have started: the bound is the next
  // power of two, not a fixed maximum (Qwen3-8B 1 worker 1k: 128 CTAs instead of 512; 4.48 -> 4.38
  // ms per step, 2 workers 8k 4.95-5.00 -> 4.79-4.83; 8 workers 1k 4.79 -> 4.87).
  int32_t bound = 16;
  while (bound < plans_[0].max_units) bound *= 2;
  plans_[0].max_units = bound;
  int32_t score_bound = 0;  // the scores kernel's grid likewise (0: no scores)
  if (sc_->active) {
    score_bound = 16;
    while (score_bound < sc_->view.max_tiles) score_bound *= 2;
    sc_->view.max_tiles = score_bound;
  }
  const auto key = std::make_tuple(T, n_logits, bound, fused_append_, score_bound);
  auto it = graphs_.find(key);
  if (it == graphs_.end()) {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    HOGWILD_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    run_layers(T, n_logits, 1);
    HOGWILD_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
    HOGWILD_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    HOGWILD_CUDA_CHECK(cudaGraphDestroy(graph));
    it = graphs_.emplace(key, exec).first;
  }
  HOGWILD_CUDA_CHECK(cudaGraphLaunch(it->second, stream_));
}

int64_t CudaBackend::enqueue_forward(const ForwardBatch& batch) {
  const int64_t T = static_cast<int64_t>(batch.tokens.size());
  if (T == 0) {  // no query: every score is 0
    scores_.clear();
    for (BlockId b : batch.score_blocks) scores_.emplace_back(table_.len(b), 0.0f);
    scores_ready_ = true;
    return 0;
  }
  const int64_t n_logits = prepare(batch);
  execute(T, n_logits);
  fetch_scores();
  return n_logits;
}

int64_t CudaBackend::forward_device(const ForwardBatch& batch) {
  if (!batch.draw.rows.empty())
    throw Error("CudaBackend::forward_device: the batch draws; use forward");
  const int64_t n_logits = enqueue_forward(batch);
  // The next forward rewrites the pinned staging buffer that this one's copies read from.
  HOGWILD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return n_logits;
}

void CudaBackend::forward(const ForwardBatch& batch, ForwardResult& out) {
  if (!batch.draw.rows.empty()) {
    sample_on_device(batch, out);
    return;
  }
  out.tokens.clear();
  std::vector<float>& logits = out.logits;
  const int64_t n = forward_device(batch);
  logits.resize(n * cfg_.vocab_size);
  if (n > 0)
    HOGWILD_CUDA_CHECK(cudaMemcpyAsync(logits.data(), logits_, logits.size() * 4,
                                       cudaMemcpyDeviceToHost, stream_));
  HOGWILD_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

}  // namespace hogwild::cuda
