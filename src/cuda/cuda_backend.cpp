// CudaBackend: construction, cache blocks, promotion and the forward pass (cuda_backend.h).
#include "cuda/cuda_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "core/error.h"
#include "cpu/rope.h"
#include "cuda/attention_plan.h"
#include "cuda/cuda_check.h"
#include "cuda/elementwise.h"
#include "cuda/gemm.h"
#include "cuda/norm.h"
#include "cuda/scoring.h"
#include "cuda/staging.h"

namespace hogwild::cuda {

static_assert(kPageTokens == hogwild::kKvPageTokens,
              "kv/backend.h kKvPageTokens: the page every backend and the KV estimate count");

std::string cuda_unsupported(const ModelConfig& c) {
  if (c.num_moe_layers() > 0) {
    if (c.num_experts > kMoeMaxExperts || c.num_experts_per_tok > kMoeMaxTopK)
      return fmt::format(
          "the CUDA mixture-of-experts kernels route over at most {} experts with a top-k of at "
          "most {}; this model has {} experts, top-{}",
          kMoeMaxExperts, kMoeMaxTopK, c.num_experts, c.num_experts_per_tok);
    if (c.hidden_size % 8 != 0 || c.moe_intermediate_size % 8 != 0)
      return fmt::format(
          "the CUDA mixture-of-experts kernels need hidden_size and moe_intermediate_size "
          "divisible by 8, this model has {} and {}",
          c.hidden_size, c.moe_intermediate_size);
    if (c.quantization_config.method == QuantMethod::gptq && c.quantization_config.desc_act)
      return "the CUDA mixture-of-experts kernels do not read GPTQ act-order (desc_act: true) "
             "experts, whose input permutation differs per expert";
  }
  if (c.head_dim != 64 && c.head_dim != 128)
    return fmt::format("the CUDA attention kernel supports head_dim 64 or 128, this model has {}",
                       c.head_dim);
  if (c.num_key_value_heads <= 0 || c.num_attention_heads % c.num_key_value_heads != 0 ||
      c.num_attention_heads / c.num_key_value_heads > kAttnMaxRows)
    return fmt::format("the CUDA backend does not support {} attention heads over {} KV heads",
                       c.num_attention_heads, c.num_key_value_heads);
  return {};
}

bool cuda_device_available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

CudaBackend::CudaBackend(const ModelWeights& weights, CudaOptions opt)
    : cfg_(weights.config), opt_(opt) {
  cfg_.quantization_config = QuantConfig{};  // fp32 host weights: dequantized already
  init_common();
  upload_weights(weights);
  size_kv_pool();
}

CudaBackend::CudaBackend(const std::string& model_dir, CudaOptions opt)
    : cfg_(load_model_config(model_dir)), opt_(opt) {
  init_common();
  load_checkpoint(model_dir, opt_.show_progress);
  size_kv_pool();
}

CudaBackend::CudaBackend(const ModelConfig& config, uint64_t seed, CudaOptions opt)
    : cfg_(config), opt_(opt) {
  init_common();
  random_weights(seed);
  size_kv_pool();
}

CudaBackend::~CudaBackend() {
  drop_graphs();
  st_.reset();
  sc_.reset();
  gemm_.reset();
  for (void* p : allocations_) cudaFree(p);
  if (stream_) cudaStreamDestroy(stream_);
}

void CudaBackend::init_common() {
  // Options first: a bad one is reported the same with or without a GPU.
  if (opt_.attn_chunk < 0 || opt_.attn_chunk % kPageTokens != 0)
    fail("attention chunk {} is not a non-negative multiple of {} keys (0 = chosen per forward)",
         opt_.attn_chunk, kPageTokens);
  if (!cuda_device_available())
    fail(
        "no CUDA GPU is usable (cudaGetDeviceCount found none); run on a machine with an NVIDIA "
        "GPU and driver, or use the CPU backend");
  HOGWILD_CUDA_CHECK(cudaSetDevice(opt_.device));
  if (std::string why = cuda_unsupported(cfg_); !why.empty()) fail("{}; use the CPU backend", why);
  HOGWILD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  gemm_ = std::make_unique<Gemm>(stream_);
  gemm_->set_skinny(opt_.skinny_gemm);
  qkv_dim_ = (cfg_.num_attention_heads + 2 * cfg_.num_key_value_heads) * cfg_.head_dim;

  // RoPE table: the CPU reference's float32 angles, {cos, sin} pairs.
  cpu::RopeTable table(cpu::compute_rope_params(cfg_));
  attn_factor_ = table.params().attention_scaling;
  const int64_t n_pos = std::max<int64_t>(cfg_.max_position_embeddings, 8192) + kPageTokens;
  table.reserve(n_pos);
  const int64_t half = table.half();
  std::vector<float2> cs(std::max<int64_t>(n_pos * half, 1));
  for (int64_t p = 0; p < n_pos; ++p)
    for (int64_t i = 0; i < half; ++i)
      cs[p * half + i] = make_float2(table.cos(p)[i], table.sin(p)[i]);
  HOGWILD_CUDA_CHECK(cudaMalloc(&rope_table_, cs.size() * sizeof(float2)));
  allocations_.push_back(rope_table_);
  HOGWILD_CUDA_CHECK(cudaMemcpyAsync(rope_table_, cs.data(), cs.size() * sizeof(float2),
                                     cudaMemcpyHostToDevice, stream_));
  HOGWILD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  rope_ = RopeTableView{rope_table_, static_cast<int32_t>(n_pos),
                        static_cast<int32_t>(table.params().rotary_dim)};
  alloc_weights();
}

void CudaBackend::size_kv_pool() {
  const ModelConfig& c = cfg_;
  const int64_t T = opt_.max_batch_tokens, H = c.hidden_size, I = c.intermediate_size;
  const int64_t qd = c.num_attention_heads * c.head_dim, E = opt_.max_entries;
  auto alloc = [&](int64_t bytes) {
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, static_cast<size_t>(bytes));
    if (e != cudaSuccess)
      fail("out of GPU memory allocating {} MiB of activations ({}); lower max_batch_tokens",
           bytes >> 20, cudaGetErrorName(e));
    allocations_.push_back(p);
    return p;
  };
  x_ = static_cast<float*>(alloc(T * H * 4));
  h_ = static_cast<bf16*>(alloc(T * H * 2));
  qkv_ = static_cast<bf16*>(alloc(T * qkv_dim_ * 2));
  attn_ = static_cast<bf16*>(alloc(T * qd * 2));
  tmp_ = static_cast<bf16*>(alloc(T * H * 2));
  gate_up_ = static_cast<bf16*>(alloc(T * 2 * I * 2));
  act_ = static_cast<bf16*>(alloc(T * I * 2));
  xl_ = static_cast<float*>(alloc(T * H * 4));
  logit_cap_ = std::min<int64_t>(T, std::max<int64_t>(64, (int64_t(1) << 30) / (c.vocab_size * 4)));
  logits_ = static_cast<float*>(alloc(logit_cap_ * c.vocab_size * 4));
  part_o_ = static_cast<float*>(alloc(E * qd * 4));
  part_ml_ = static_cast<float2*>(alloc(E * c.num_attention_heads * 8));
  if (has_moe_) {
    const int64_t Ex = c.num_experts, k = c.num_experts_per_tok, Im = c.moe_intermediate_size;
    router_logits_ = static_cast<float*>(alloc(T * Ex * 4));
    moe_route_ = moe_route_view(alloc(moe_route_bytes(T, Ex, k)), T, Ex, k);
    moe_active_ = static_cast<int32_t*>(alloc(c.num_hidden_layers * 4));
    HOGWILD_CUDA_CHECK(cudaMemset(moe_active_, 0, c.num_hidden_layers * 4));
    if (opt_.record_routing)
      moe_record_ = static_cast<int32_t*>(alloc(c.num_hidden_layers * T * k * 4));
    moe_act_ = static_cast<bf16*>(alloc(T * k * Im * 2));
    moe_y_ = static_cast<float*>(alloc(T * k * H * 4));
  }
  if (quantized_) {  // quant_linear's scratch for the largest projection at T rows
    int64_t b = 0;
    for (const DeviceLayer& L : layers_)
      for (const QuantWeight* q : {&L.qkv_q, &L.o_q, &L.gate_up_q, &L.down_q})  // not experts
        if (q->format != WeightFormat::dense) b = std::max(b, quant_scratch_bytes(*q, T));
    quant_scratch_ = alloc(std::max<int64_t>(b, 256));
  }

  layout_.num_key_value_heads = static_cast<int32_t>(c.num_key_value_heads);
  layout_.head_dim = static_cast<int32_t>(c.head_dim);
  const int64_t page_bytes = kv_bytes_per_token() * kPageTokens;
  int64_t pages = 0;
  if (opt_.max_kv_tokens > 0) {
    pages = (opt_.max_kv_tokens + kPageTokens - 1) / kPageTokens;
  } else {
    size_t free_b = 0, total_b = 0;
    HOGWILD_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    // Leave reserve_bytes plus room for the staging buffers and graphs.
    pages = (static_cast<int64_t>(free_b) - opt_.reserve_bytes) / page_bytes;
  }
  if (pages < 1)
    fail(
        "no GPU memory left for the KV cache after the weights ({} MiB per {}-token page); use a "
        "GPU with more memory",
        page_bytes >> 20, kPageTokens);
  layout_.num_pages = pages;
  pool_ = static_cast<bf16*>(alloc(pages * page_bytes));
  table_ = BlockTable(pages, kPageTokens);

  st_ = std::make_unique<Staging>();
  st_->tcap = T;
  st_->ecap = E;
  st_->pcap = pages;
  st_->ucap = E * c.num_key_value_heads;
  st_->alloc(2);
}

void CudaBackend::require_kv_tokens(int64_t tokens, const std::string& advice) const {
  const int64_t pages_needed = (tokens + kPageTokens - 1) / kPageTokens;
  if (pages_needed > table_.free_pages())
    fail(
        "the run needs KV cache for {} tokens ({:.1f} GiB) but only {} tokens ({:.1f} GiB) fit in "
        "GPU memory next to the weights; {}",
        tokens, tokens * double(kv_bytes_per_token()) / (1 << 30), kv_free_tokens(),
        kv_free_tokens() * double(kv_bytes_per_token()) / (1 << 30), advice);
}

// ---- cache blocks ----

BlockId CudaBackend::new_block() { return table_.new_block(); }

void CudaBackend::free_block(BlockId b) { table_.free_block(b); }

int64_t CudaBackend::block_len(BlockId b) const { return table_.len(b); }

void CudaBackend::truncate_block(BlockId b, int64_t new_len) { table_.truncate(b, new_len); }

void CudaBackend::append_block(BlockId dst, BlockId src) {
  table_.check_append(dst, src);
  const int64_t n = table_.len(src), delta = table_.len(dst);
  if (n == 0) return;
  if (delta >= rope_.n_positions)
    fail("append_block: destination length {} exceeds the RoPE table ({} positions)", delta,
         rope_.n_positions);
  table_.grow(dst, delta + n);
  const std::vector<int32_t>& s_pages = table_.pages(src);
  const std::vector<int32_t>& d_pages = table_.pages(dst);
  if (n > promote_cap_) {
    if (promote_slots_) HOGWILD_CUDA_CHECK(cudaFree(promote_slots_));
    promote_cap_ = std::max<int64_t>(n, 4096);
    HOGWILD_CUDA_CHECK(cudaMalloc(&promote_slots_, 2 * promote_cap_ * 4));
  }
  // Source slots, then destination slots; a page src gave back (all forgotten) is not copied.
  std::vector<int32_t> slots(2 * n);
  int64_t m = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (s_pages[i / kPageTokens] == BlockTable::kNoPage) continue;
    slots[m] = s_pages[i / kPageTokens] * kPageTokens + static_cast<int32_t>(i % kPageTokens);
    const int64_t j = delta + i;
    slots[n + m] = d_pages[j / kPageTokens] * kPageTokens + static_cast<int32_t>(j % kPageTokens);
    ++m;
  }
  if (m < n) std::copy(slots.begin() + n, slots.begin() + n + m, slots.begin() + m);
  if (m > 0) {
    HOGWILD_CUDA_CHECK(
        cudaMemcpyAsync(promote_slots_, slots.data(), 2 * m * 4, cudaMemcpyHostToDevice, stream_));
    kv_promote(pool_, layout_, cfg_.num_hidden_layers, promote_slots_, promote_slots_ + m, m,
               static_cast<int32_t>(delta), rope_, stream_);
    HOGWILD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  table_.append_gaps(dst, src, delta);  // src's forgotten tokens stay forgotten in dst
}

void CudaBackend::read_block(BlockId b, int64_t layer, std::vector<float>& k,
                             std::vector<float>& v) const {
  const int64_t len = table_.len(b);
  const std::vector<int32_t>& pages = table_.pages(b);
  if (layer < 0 || layer >= cfg_.num_hidden_layers)
    fail("read_block: layer {} outside [0, {})", layer, cfg_.num_hidden_layers);
  const int64_t kvh = layout_.num_key_value_heads, hd = layout_.head_dim;
  k.assign(len * kvh * hd, 0.0f);
  v.assign(len * kvh * hd, 0.0f);
  std::vector<bf16> page(2 * kvh * layout_.tile_elems());
  const bf16* base = pool_ + layer * layout_.layer_elems();
  for (size_t pi = 0; pi < pages.size(); ++pi) {
    if (pages[pi] == BlockTable::kNoPage) continue;  // forgotten and given back: zeros
    HOGWILD_CUDA_CHECK(cudaMemcpyAsync(page.data(), base + layout_.tile_offset(pages[pi], 0, 0),
                                       page.size() * 2, cudaMemcpyDeviceToHost, stream_));
    HOGWILD_CUDA_CHECK(cudaStreamSynchronize(stream_));
    for (int64_t i = 0; i < kPageTokens; ++i) {
      const int64_t j = static_cast<int64_t>(pi) * kPageTokens + i;
      if (j >= len) break;
      for (int64_t h = 0; h < kvh; ++h)
        for (int64_t d = 0; d < hd; ++d) {
          k[(j * kvh + h) * hd + d] =
              __bfloat162float(page[layout_.tile_offset(0, 0, h) + i * hd + d]);
          v[(j * kvh + h) * hd + d] =
              __bfloat162float(page[layout_.tile_offset(0, 1, h) + i * hd + d]);
        }
    }
  }
}

std::vector<float> CudaBackend::debug_activation(const std::string& what, int64_t n) const {
  const bool qkv = what == "qkv";
  if (!qkv && what != "attn") fail("debug_activation: unknown buffer '{}'", what);
  const int64_t cols = qkv ? qkv_dim_ : cfg_.num_attention_heads * cfg_.head_dim;
  std::vector<bf16> h(n * cols);
  HOGWILD_CUDA_CHECK(
      cudaMemcpyAsync(h.data(), qkv ? qkv_ : attn_, h.size() * 2, cudaMemcpyDeviceToHost, stream_));
  HOGWILD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  std::vector<float> f(h.size());
  for (size_t i = 0; i < h.size(); ++i) f[i] = __bfloat162float(h[i]);
  return f;
}

void CudaBackend::fill_block_random(BlockId b, int64_t len, uint64_t seed) {
  if (table_.len(b) != 0) fail("fill_block_random: block {} is not empty", b);
  table_.grow(b, len);
  const int64_t page_elems = 2 * layout_.num_key_value_heads * layout_.tile_elems();
  for (int64_t l = 0; l < cfg_.num_hidden_layers; ++l)
    for (int32_t pg : table_.pages(b))
      fill_uniform_bf16(pool_ + l * layout_.layer_elems() + layout_.tile_offset(pg, 0, 0),
                        page_elems, seed * 7919 + l * 1000003 + pg, 1.0f, 0.0f, stream_);
  HOGWILD_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

}  // namespace hogwild::cuda
