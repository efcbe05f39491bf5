// Hogwild attention kernels (attention.h): per-(item, KV head) partial states on the tensor cores
// (mma.sync m16n8k16 bf16, fp32 accumulation), then a log-sum-exp combine per (row, head).
// Kernels first, launchers second.
//
// Partial kernel layout: one CTA of 16 warps per unit (an item and one KV head, or several KV heads
// of a one-tile item). The chunk's 64-key tiles stream through a kStages-deep cp.async ring in
// shared memory, one barrier per tile. Warp w owns query row tile rt = w / 4 (16 rows) and keys
// [16 kq, 16 kq + 16) of every tile, kq = w % 4: S = Q K^T,
// the online softmax and O += P V stay in its registers (flash-attention-2 register reuse: the S
// accumulator is the A operand of P V), so warps never wait for each other inside a tile. Warps
// whose row tile is empty only help load. At the end the 4 key-quarter states of each row are
// merged through shared memory (aliasing the ring) into the item's partial states. A unit of
// several heads (AttnUnit) stacks them: its rows are the item's rows once per head (head after
// head, each padded to whole row tiles), and head j's only tile sits in ring stage j. A unit of
// one tile skips the tile loop and the merge (one_tile_unit): the rows' maxima and P go through
// shared memory instead, and each warp writes a quarter of the dims.
#include "cuda/attention.h"
#include "cuda/mma.cuh"
#include "cuda/pdl.cuh"

namespace hogwild::cuda {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kWarps = 16;
constexpr int kThreads = 32 * kWarps;
constexpr int kRows = kAttnMaxRows;  // 64 query rows per CTA = 4 row tiles
constexpr int kKeys = kPageTokens;   // 64 keys per tile = 4 key quarters
constexpr int kStages = 4;           // K/V tiles in flight per CTA (1 CTA per SM)
static_assert(kAttnFreshTiles == kStages - 1, "the fused append's tiles are the prologue's");
static_assert(kAttnMaxUnitHeads <= kStages && kAttnMaxUnitHeads * 16 <= kRows,
              "each head of a unit (AttnUnit) needs its own ring stage and row tile");
constexpr float kSlack = 8.0f;  // log2 headroom before the running max moves (softmax)

template <int HD>
struct Smem {
  static constexpr int kLd = HD + 8;  // bf16 Q/K/V row stride (16-byte pad: conflict-free ldmatrix)
  static constexpr int kRing = kStages * 2 * kKeys * kLd;  // bf16 elements of the K/V ring
  bf16 q[kRows * kLd];
  union {
    bf16 kv[kRing];             // stage s: K at s * 2 * kKeys * kLd, V after it
    float o[4][4][16][HD + 4];  // merge: [row tile][key quarter][row][dim] (+4: banks)
  } u;
  float m[4][4][16];
  float l[4][4][16];
  int32_t limit[kRows];
  int32_t row[kRows];  // query token of each row, -1 for padding
};

__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const bf16* p) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], const bf16* p) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
__device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

struct PartialArgs {
  const bf16* q;
  AttnShape shape;
  const bf16* pool;
  KvLayout layout;
  RopeTableView rope;
  AttnPlanView plan;
  AttnAppend append;
  bool fused;  // append is in use
};

// Sum of squares of a head vector held by a warp, lane l holding dims l + 32 i (i < HD / 32), in
// the order of qk_norm_kv_append_kernel (rope.cu): a butterfly per 32 dims, then the 32-dim sums
// in order, so the fused path's 1 / RMS is bit-identical to the separate kernel's.
template <int HD>
__device__ __forceinline__ float head_sum_sq(const float (&v)[HD / 32]) {
  float ss = 0.0f;
#pragma unroll
  for (int i = 0; i < HD / 32; ++i) {
    float p = v[i] * v[i];
    for (int o = 16; o > 0; o >>= 1) p += __shfl_xor_sync(0xffffffffu, p, o);
    ss += p;
  }
  return ss;
}

// Page id of tile `tile` of the item (a global load: callers issue it a tile ahead).
__device__ __forceinline__ int32_t tile_page(const PartialArgs& a, const AttnItem& it, int tile) {
  return a.plan.pages[it.page_base + it.key_start / kKeys + tile];
}

// This thread's share of a K (or V) tile copy: 16-byte chunks c = threadIdx.x + i * kThreads of
// the kKeys x HD tile (key c / (HD / 8), dims (c % (HD / 8)) * 8 ..), fixed for the whole kernel so
// a tile's copy is kPer address additions per kind.
template <int HD>
struct TileCopy {
  static constexpr int kPer = kKeys * HD / 8 / kThreads;  // chunks per thread (2 at HD 128)
  static_assert(kPer >= 1 && kKeys * HD / 8 % kThreads == 0);
  int smem[kPer];  // element offset in a stage's K part (V: + kKeys * kLd)
  int key[kPer];   // key of the chunk within the tile
  __device__ TileCopy() {
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int c = threadIdx.x + i * kThreads;
      key[i] = c / (HD / 8);
      smem[i] = key[i] * Smem<HD>::kLd + (c % (HD / 8)) * 8;
    }
  }
};

// Fused append (rotary_dim == HD): RMS-normalises a head vector held by a warp (lane l holds
// dims l + 32 i) with weight w as qk_norm_kv_append_kernel does (bf16 result), then rotates it
// by cos/sin cs[i] of dim (l + 32 i) mod HD / 2; the rotation partner of dim d = l + 32 i is
// d +- HD / 2, held by the same lane at i ^ (HD / 64). Returns the rotated values (fp32, to be
// rounded to bf16 by the caller).
template <int HD>
__device__ __forceinline__ void norm_rotate(float (&x)[HD / 32], const bf16* w, float eps,
                                            const float2 (&cs)[HD / 64], float factor) {
  constexpr int kPer = HD / 32;
  const int lane = threadIdx.x & 31;
  if (w) {
    const float r = rsqrtf(head_sum_sq<HD>(x) / float(HD) + eps);
#pragma unroll
    for (int i = 0; i < kPer; ++i)
      x[i] = __bfloat162float(__float2bfloat16(x[i] * r * __bfloat162float(w[lane + 32 * i])));
  }
  float y[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const bool lo = i < kPer / 2;  // d < HD / 2
    const float partner = x[i ^ (kPer / 2)];
    const float2 c = cs[i % (kPer / 2)];
    y[i] = (x[i] * c.x + (lo ? -partner : partner) * c.y) * factor;
  }
#pragma unroll
  for (int i = 0; i < kPer; ++i) x[i] = y[i];
}

// Fused append: keys [k0, k1) of the tile (tile-local) are this forward's; each warp computes some
// of them from the qkv rows as qk_norm_kv_append_kernel / kv_append_kernel do (k-norm, RoPE at the
// block-local key position times the attention factor, bf16) and stores K and V into the stage
// and into the pool, for KV heads h0 + i in stages stage0 + i (i < n_heads), all (head, key) pairs
// spread over the warps at once. Called after pdl_wait (the qkv projection is complete).
template <int HD>
__device__ __forceinline__ void compute_fresh(Smem<HD>& sm, int stage0, const PartialArgs& a,
                                              const AttnItem& it, int tile, int32_t page, int h0,
                                              int n_heads, int k0, int k1) {
  constexpr int kLd = Smem<HD>::kLd;
  constexpr int kPer = HD / 32;
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const int tile_start = it.key_start + tile * kKeys;
  const int n_keys = k1 - k0;
  for (int w = warp; w < n_heads * n_keys; w += kWarps) {
    const int h = h0 + w / n_keys, stage = stage0 + w / n_keys, kk = k0 + w % n_keys;
    const int j = tile_start + kk;  // block-local key = its RoPE position
    const int64_t tok = it.fresh_row + (j - it.fresh_from);
    const bf16* kin = a.q + tok * a.shape.q_token_stride + a.append.k_col + int64_t(h) * HD;
    const bf16* vin = a.q + tok * a.shape.q_token_stride + a.append.v_col + int64_t(h) * HD;
    float x[kPer];
    bf16 vv[kPer];
    float2 cs[kPer / 2];
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      x[i] = __bfloat162float(kin[lane + 32 * i]);
      vv[i] = vin[lane + 32 * i];
    }
#pragma unroll
    for (int i = 0; i < kPer / 2; ++i)
      cs[i] = a.rope.cos_sin[int64_t(j) * (HD / 2) + lane + 32 * i];
    norm_rotate<HD>(x, a.append.w_k, a.append.eps, cs, a.shape.attn_factor);
    bf16* ks = sm.u.kv + stage * 2 * kKeys * kLd + kk * kLd;
    bf16* vs = ks + kKeys * kLd;
    bf16* kp = a.append.pool + a.layout.tile_offset(page, 0, h) + int64_t(kk) * HD;
    bf16* vp = a.append.pool + a.layout.tile_offset(page, 1, h) + int64_t(kk) * HD;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int d = lane + 32 * i;
      const bf16 kr = __float2bfloat16(x[i]);
      ks[d] = kr;
      vs[d] = vv[i];
      kp[d] = kr;
      vp[d] = vv[i];
    }
  }
}

// Fused append: the queries of the CTA's rows (a warp per row; every load of a warp's rows is
// issued before any arithmetic) with q-norm, rotated by their limit, into sm.q; pad rows zero.
// Unit row R is item row R % used_rows of KV head h0 + R / used_rows.
template <int HD>
__device__ __forceinline__ void fused_queries(Smem<HD>& sm, const PartialArgs& a, int h0, int G,
                                              int used_rows, int unit_rows) {
  constexpr int kLd = Smem<HD>::kLd;
  constexpr int kPer = HD / 32;
  constexpr int kRowsPerWarp = kRows / kWarps;
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  float x[kRowsPerWarp][kPer];
  float2 cs[kRowsPerWarp][kPer / 2];
#pragma unroll
  for (int k = 0; k < kRowsPerWarp; ++k) {
    const int R = warp + kWarps * k, r = R % used_rows;
    const int tok = R < unit_rows ? sm.row[r] : -1;
    if (tok < 0) continue;
    const int hq = (h0 + R / used_rows) * G + r % G;
    const bf16* qv = a.q + int64_t(tok) * a.shape.q_token_stride + int64_t(hq) * HD;
#pragma unroll
    for (int i = 0; i < kPer; ++i) x[k][i] = __bfloat162float(qv[lane + 32 * i]);
#pragma unroll
    for (int i = 0; i < kPer / 2; ++i)
      cs[k][i] = a.rope.cos_sin[int64_t(sm.limit[r]) * (HD / 2) + lane + 32 * i];
  }
#pragma unroll
  for (int k = 0; k < kRowsPerWarp; ++k) {
    const int R = warp + kWarps * k;
    if (R >= unit_rows) continue;
    const bool live = sm.row[R % used_rows] >= 0;
    if (live) norm_rotate<HD>(x[k], a.append.w_q, a.append.eps, cs[k], a.shape.attn_factor);
#pragma unroll
    for (int i = 0; i < kPer; ++i)
      sm.q[R * kLd + lane + 32 * i] = __float2bfloat16(live ? x[k][i] : 0.0f);
  }
}

// Copies tile `tile` of the item (page `page`) of KV heads h0 + i into ring stages stage0 + i
// (i < n_heads); keys at or past the item's key_end are zero-filled (never NaN garbage). In global
// memory the chunk of thread share i is at element (threadIdx.x + i * kThreads) * 8 of the tile.
// kFused (the fused append): keys [fresh_from, key_end) of the tile are computed (compute_fresh),
// not copied, so no cp.async may write those rows. Only the prologue's tiles (< kAttnFreshTiles)
// can hold such keys (build_plan), so the main loop keeps the plain copy.
template <int HD, bool kFused>
__device__ __forceinline__ void load_tile(Smem<HD>& sm, const TileCopy<HD>& tc, int stage0,
                                          const PartialArgs& a, const AttnItem& it, int tile,
                                          int32_t page, int h0, int n_heads = 1) {
  constexpr int kLd = Smem<HD>::kLd;
  const int keys_left = it.key_end - (it.key_start + tile * kKeys);
  const int fresh = kFused ? max(it.fresh_from - (it.key_start + tile * kKeys), 0) : kKeys;
  const int64_t v_delta = int64_t(a.layout.num_key_value_heads) * a.layout.tile_elems();
  for (int j = 0; j < n_heads; ++j) {
    const bf16* ksrc = a.pool + a.layout.tile_offset(page, 0, h0 + j) + threadIdx.x * 8;
    bf16* kdst = sm.u.kv + (stage0 + j) * 2 * kKeys * kLd;
#pragma unroll
    for (int i = 0; i < TileCopy<HD>::kPer; ++i) {
      const bool valid = tc.key[i] < keys_left;
      if (kFused && valid && tc.key[i] >= fresh) continue;
      const bf16* src = ksrc + i * kThreads * 8;
      cp_async16(kdst + tc.smem[i], src, valid);
      cp_async16(kdst + kKeys * kLd + tc.smem[i], src + v_delta, valid);
    }
  }
  if (kFused && fresh < min(keys_left, kKeys))
    compute_fresh<HD>(sm, stage0, a, it, tile, page, h0, n_heads, fresh, min(keys_left, kKeys));
}

// S (16 query rows x 16 keys, fp32) = Q K^T over HD / 16 k-steps of mma.sync, for the warp of lane
// `lane`: qs the row tile's first query row and ks its first key in shared memory (row stride
// Smem<HD>::kLd). s[j] is n-tile j (keys 8j..8j+7) in the m16n8 accumulator layout: lane (g, t)
// holds rows g (s[j][0..1]) and g + 8 (s[j][2..3]), keys 8j + 2t, + 1.
template <int HD>
__device__ __forceinline__ void scores_16x16(const bf16* qs, const bf16* ks, int lane,
                                             float (&s)[2][4]) {
  constexpr int kLd = Smem<HD>::kLd;
#pragma unroll
  for (int j = 0; j < 2; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
  for (int kk = 0; kk < HD / 16; ++kk) {
    uint32_t qa[4], kb[4];
    ldmatrix_x4(qa, qs + (lane & 15) * kLd + kk * 16 + (lane >> 4) * 8);
    ldmatrix_x4(kb, ks + ((lane & 7) + ((lane >> 4) << 3)) * kLd + kk * 16 + ((lane >> 3) & 1) * 8);
    mma16816(s[0], qa, kb[0], kb[1]);
    mma16816(s[1], qa, kb[2], kb[3]);
  }
}

// A unit of one tile (a worker's short step block; every unit of several heads): no running
// softmax and no merge of key quarters through shared memory. Phase 1: warp (rt, kq) computes S
// for its 16 keys (as the tile loop does) and publishes its rows' maxima; phase 2: with the row
// max over all 64 keys it writes P (bf16) over the row tile's queries in sm.q (no longer read) and
// its share of l; phase 3: warp (rt, dq) multiplies the row tile's whole P by V for dims
// [dq HD / 4, (dq + 1) HD / 4) and writes those dims of the partial state straight to global
// memory. m is the row's exact max. Called by every thread (it holds barriers) after the tile
// and the queries are in shared memory and visible.
template <int HD>
__device__ __forceinline__ void one_tile_unit(Smem<HD>& sm, const PartialArgs& a,
                                              const AttnItem& it, int stage, int h0, int hj,
                                              int n_r16, int G, int n_rows, bool active) {
  constexpr int kLd = Smem<HD>::kLd;
  constexpr int kNtW = HD / 8 / 4;  // O n-tiles (8 dims) per warp in phase 3
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int rt = warp / 4, kq = warp % 4;
  const int r0 = (rt - hj * n_r16) * 16 + g;  // the lane's first row within the item
  const bf16* ks = sm.u.kv + stage * 2 * kKeys * kLd;
  const bf16* vs = ks + kKeys * kLd;
  bf16* qs = sm.q + rt * 16 * kLd;
  const float scale_log2 = a.shape.scale * 1.4426950408889634f;
  float v[2][4];
  if (active) {
    const int lim[2] = {sm.limit[r0], sm.limit[r0 + 8]};
    float s[2][4];
    scores_16x16<HD>(qs, ks + kq * 16 * kLd, lane, s);
    const int key_base = it.key_start + kq * 16;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int key = key_base + 8 * j + 2 * t + e;
          const float x = s[j][2 * r + e] * scale_log2;
          v[r][2 * j + e] = key <= lim[r] && key < it.key_end && key >= it.key_from ? x : -INFINITY;
        }
      float mx = fmaxf(fmaxf(v[r][0], v[r][1]), fmaxf(v[r][2], v[r][3]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      if (t == 0) sm.m[rt][kq][g + 8 * r] = mx;
    }
  }
  __syncthreads();  // every quarter's maxima are published; sm.q is read no more
  float m[2] = {-INFINITY, -INFINITY};
  if (active) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
#pragma unroll
      for (int q = 0; q < 4; ++q) m[r] = fmaxf(m[r], sm.m[rt][q][g + 8 * r]);
      const float m_sub = m[r] == -INFINITY ? 0.0f : m[r];  // no visible key: p = 0
      float p[4];
#pragma unroll
      for (int c = 0; c < 4; ++c) p[c] = exp2f(v[r][c] - m_sub);
      float l = (p[0] + p[1]) + (p[2] + p[3]);
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      if (t == 0) sm.l[rt][kq][g + 8 * r] = l;
      bf16* prow = qs + (g + 8 * r) * kLd + kq * 16 + 2 * t;
      *reinterpret_cast<uint32_t*>(prow) = pack_bf16(p[0], p[1]);
      *reinterpret_cast<uint32_t*>(prow + 8) = pack_bf16(p[2], p[3]);
    }
  }
  __syncthreads();  // P and the quarters' sums are complete
  if (!active) return;
  const int dq = kq;
  float o[kNtW][4];
#pragma unroll
  for (int j = 0; j < kNtW; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
#pragma unroll
  for (int kk = 0; kk < kKeys / 16; ++kk) {
    uint32_t pa[4];
    ldmatrix_x4(pa, qs + (lane & 15) * kLd + kk * 16 + (lane >> 4) * 8);
    const bf16* vk = vs + kk * 16 * kLd;
#pragma unroll
    for (int j = 0; j < kNtW; j += 2) {
      uint32_t vb[4];
      const int n8 = dq * kNtW + j;
      ldmatrix_x4_trans(vb,
                        vk + ((lane & 7) + ((lane >> 3) & 1) * 8) * kLd + n8 * 8 + (lane >> 4) * 8);
      mma16816(o[j], pa, vb[0], vb[1]);
      mma16816(o[j + 1], pa, vb[2], vb[3]);
    }
  }
  const int nh = a.shape.num_attention_heads;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int ri = r0 + 8 * r;
    if (ri >= n_rows) continue;  // padding of the head's row tiles
    const int64_t e = it.entry_start + ri / G;
    const int hq = (h0 + hj) * G + ri % G;
    if (dq == 0 && t == 0) {
      float l = 0.0f;
#pragma unroll
      for (int q = 0; q < 4; ++q) l += sm.l[rt][q][g + 8 * r];
      a.plan.part_ml[e * nh + hq] = make_float2(m[r], l);
    }
    float* out = a.plan.part_o + (e * nh + hq) * HD + dq * kNtW * 8 + 2 * t;
#pragma unroll
    for (int j = 0; j < kNtW; ++j)
      *reinterpret_cast<float2*>(out + 8 * j) = make_float2(o[j][2 * r], o[j][2 * r + 1]);
  }
}

// grid (max_units), kThreads threads, dynamic smem sizeof(Smem<HD>); CTA b runs unit b. CTAs start
// in unit order: the plan lists a long block's chunks before the workers' short steps, and short
// units left over for a second wave cost little.
template <int HD>
__global__ void __launch_bounds__(kThreads, 1) attn_partial_kernel(PartialArgs a) {
  pdl_launch_dependents();
  if (blockIdx.x >= *a.plan.n_units) {  // the plan is uploaded before the graph: no wait needed
    pdl_wait();
    return;
  }
  extern __shared__ __align__(128) unsigned char raw[];
  Smem<HD>& sm = *reinterpret_cast<Smem<HD>*>(raw);
  constexpr int kLd = Smem<HD>::kLd;
  constexpr int kNt = HD / 8;  // O n-tiles of 8 dims
  const AttnUnit unit = a.plan.units[blockIdx.x];
  const AttnItem& it = unit.it;
  const int h0 = unit.kv_head, n_heads = unit.kv_heads;  // n_heads > 1: one tile (AttnUnit)
  const int G = a.shape.num_attention_heads / a.shape.num_key_value_heads;
  const int n_rows = it.pair_count * G;
  const int n_r16 = (n_rows + 15) / 16;
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int rt = warp / 4, kq = warp % 4;
  const int hj = rt / n_r16;  // this warp's head within the unit
  const int n_tiles = (it.key_end - it.key_start + kKeys - 1) / kKeys;
  const TileCopy<HD> tc;
  auto load = [&](int stage, int tile, int32_t page, int heads) {
    if (a.fused)
      load_tile<HD, true>(sm, tc, stage, a, it, tile, page, h0, heads);
    else
      load_tile<HD, false>(sm, tc, stage, a, it, tile, page, h0, heads);
  };

  // Before pdl_wait: the plan (uploaded before the graph) and the K/V tiles no kernel of this
  // forward writes (they end before fresh_from), so their loads overlap the previous kernel.
  const int used_rows = n_r16 * 16;  // rows past this are never touched by the MMAs
  const int unit_rows = n_heads * used_rows;
  if (threadIdx.x < used_rows) {
    const int r = threadIdx.x;
    AttnPair pr{-1, -1};
    if (r < n_rows) pr = a.plan.pairs[it.pair_start + r / G];
    sm.limit[r] = pr.limit;
    sm.row[r] = pr.row;
  }
  int early = 0;  // prologue tiles loaded before the wait (a prefix)
  while (early < kStages - 1 && early < n_tiles &&
         it.key_start + (early + 1) * kKeys <= it.fresh_from)
    ++early;
#pragma unroll
  for (int p = 0; p < kStages - 1; ++p) {
    if (p == early) pdl_wait();
    if (n_heads > 1) {  // every head's only tile in group 0, head j in stage j
      if (p == 0) load(0, 0, unit.page[0], n_heads);
    } else if (p < n_tiles) {
      load(p, p, unit.page[p], 1);
    }
    cp_async_commit();
  }
  if (early == kStages - 1) pdl_wait();
  // The page id of the next tile to load, fetched an iteration early so the loop never stalls
  // on it.
  int32_t next_page = kStages - 1 < n_tiles ? tile_page(a, it, kStages - 1) : 0;

  // Queries, rotated per pair by its limit (p - o) with the attention factor; zero pad rows
  // (the loads are independent, unrolled).
  const int half = a.rope.rotary_dim / 2;
  __syncthreads();
  if (a.fused) {
    fused_queries<HD>(sm, a, h0, G, used_rows, unit_rows);
  } else {
#pragma unroll 4
    for (int idx = threadIdx.x; idx < unit_rows * HD; idx += kThreads) {
      const int R = idx / HD, d = idx % HD, r = R % used_rows;
      const int tok = sm.row[r];
      float val = 0.0f;
      if (tok >= 0) {
        const int hq = (h0 + R / used_rows) * G + r % G;
        const bf16* qv = a.q + int64_t(tok) * a.shape.q_token_stride + int64_t(hq) * HD;
        val = __bfloat162float(qv[d]);
        if (d < a.rope.rotary_dim) {
          const float2 cs = a.rope.cos_sin[int64_t(sm.limit[r]) * half + (d < half ? d : d - half)];
          const float partner = __bfloat162float(qv[d < half ? d + half : d - half]);
          val = (val * cs.x + (d < half ? -partner : partner) * cs.y) * a.shape.attn_factor;
        }
      }
      sm.q[R * kLd + d] = __float2bfloat16(val);
    }
  }
  const bool active = rt < n_heads * n_r16;
  if (n_tiles == 1) {
    cp_async_wait<0>();
    __syncthreads();  // the tile (head j's in stage j) and the queries are in shared memory
    one_tile_unit<HD>(sm, a, it, n_heads > 1 ? hj : 0, h0, hj, n_r16, G, n_rows, active);
    return;
  }
  const float scale_log2 = a.shape.scale * 1.4426950408889634f;
  // This lane's rows (g, g + 8 of the row tile) and their last visible key.
  int lim[2] = {-1, -1};
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  float o[kNt][4];
#pragma unroll
  for (int j = 0; j < kNt; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;

  for (int tile = 0; tile < n_tiles; ++tile) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // tile's stage landed for all threads; stage (tile - 1) % S is free
    const int nt = tile + kStages - 1;
    if (nt < n_tiles) {
      const int32_t page = next_page;
      next_page = nt + 1 < n_tiles ? tile_page(a, it, nt + 1) : 0;
      load_tile<HD, false>(sm, tc, nt % kStages, a, it, nt, page, h0);
    }
    cp_async_commit();
    if (!active) continue;
    if (tile == 0) {
      const int r0 = (rt - hj * n_r16) * 16 + g;  // the warp's rows within the item
      lim[0] = sm.limit[r0];
      lim[1] = sm.limit[r0 + 8];
    }
    const int stage = n_heads > 1 ? hj : tile % kStages;
    const bf16* ks = sm.u.kv + stage * 2 * kKeys * kLd + kq * 16 * kLd;
    const bf16* vs = ks + kKeys * kLd;
    const bf16* qs = sm.q + rt * 16 * kLd;

    float s[2][4];
    scores_16x16<HD>(qs, ks, lane, s);

    // Online softmax (base 2) per row; m is uniform over the row's 4 lanes, l stays lane-partial.
    // m is the reference the row's p, l and o use: it moves only when a key exceeds it by more
    // than kSlack (p <= 2^kSlack meanwhile, far inside fp32 and bf16 range), so O is rarely
    // rescaled. exp2 of -inf is 0, so masked keys need no branch; a row with no visible key yet
    // (m = -inf) subtracts 0.
    const int key_base = it.key_start + tile * kKeys + kq * 16;
    const bool full =
        key_base >= it.key_from && key_base + 15 <= min(min(lim[0], lim[1]), it.key_end - 1);
    uint32_t pa[4];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float v[4];
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int key = key_base + 8 * j + 2 * t + e;
          const float x = s[j][2 * r + e] * scale_log2;
          v[2 * j + e] =
              full || (key <= lim[r] && key < it.key_end && key >= it.key_from) ? x : -INFINITY;
        }
      float mx = fmaxf(fmaxf(v[0], v[1]), fmaxf(v[2], v[3]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      if (mx > m[r] + kSlack) {   // also the row's first visible key (m = -inf)
        if (m[r] != -INFINITY) {  // before it, l and o are 0
          const float alpha = exp2f(m[r] - mx);
          l[r] *= alpha;
#pragma unroll
          for (int j = 0; j < kNt; ++j) {
            o[j][2 * r] *= alpha;
            o[j][2 * r + 1] *= alpha;
          }
        }
        m[r] = mx;
      }
      const float m_sub = m[r] == -INFINITY ? 0.0f : m[r];
      float p[4];
#pragma unroll
      for (int c = 0; c < 4; ++c) p[c] = exp2f(v[c] - m_sub);
      l[r] += (p[0] + p[1]) + (p[2] + p[3]);
      // A fragment of P: rows g / g + 8 (r), keys 2t.. (n-tile 0) and 8 + 2t.. (n-tile 1).
      pa[r] = pack_bf16(p[0], p[1]);
      pa[2 + r] = pack_bf16(p[2], p[3]);
    }

    // O (16 rows x HD) += P (16 x 16 keys) V (16 keys x HD); V fragments by transposed ldmatrix.
#pragma unroll
    for (int j = 0; j < kNt; j += 2) {
      uint32_t vb[4];
      ldmatrix_x4_trans(vb,
                        vs + ((lane & 7) + ((lane >> 3) & 1) * 8) * kLd + j * 8 + (lane >> 4) * 8);
      mma16816(o[j], pa, vb[0], vb[1]);
      mma16816(o[j + 1], pa, vb[2], vb[3]);
    }
  }

  // Merge the 4 key quarters of each row tile through shared memory (the ring is free now).
  cp_async_wait<0>();
  __syncthreads();
  if (active) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
      l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
      if (t == 0) {
        sm.m[rt][kq][g + 8 * r] = m[r];
        sm.l[rt][kq][g + 8 * r] = l[r];
      }
    }
#pragma unroll
    for (int j = 0; j < kNt; ++j)
#pragma unroll
      for (int c = 0; c < 4; ++c)
        sm.u.o[rt][kq][g + 8 * (c >> 1)][8 * j + 2 * t + (c & 1)] = o[j][c];
  }
  __syncthreads();
  // Per row: the max over its 4 key quarters, their weights 2^(m_q - max) (over m in place) and
  // the denominator; then the weighted sum of the quarters' outputs, 4 dims per thread.
  const int nh = a.shape.num_attention_heads;
  if (threadIdx.x < unit_rows && int(threadIdx.x) % used_rows < n_rows) {
    const int R = threadIdx.x, r = R % used_rows, tr = R / 16, rr = R % 16;
    float mx = -INFINITY;
#pragma unroll
    for (int q = 0; q < 4; ++q) mx = fmaxf(mx, sm.m[tr][q][rr]);
    const float m_sub = mx == -INFINITY ? 0.0f : mx;
    float den = 0.0f;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const float w = exp2f(sm.m[tr][q][rr] - m_sub);  // an empty quarter (-inf): 0
      sm.m[tr][q][rr] = w;
      den += w * sm.l[tr][q][rr];
    }
    const int hq = (h0 + R / used_rows) * G + r % G;
    a.plan.part_ml[(it.entry_start + r / G) * nh + hq] = make_float2(mx, den);
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < unit_rows * (HD / 4); idx += kThreads) {
    const int R = idx / (HD / 4), d = (idx % (HD / 4)) * 4, r = R % used_rows;
    if (r >= n_rows) continue;  // padding of a head's row tiles
    const int tr = R / 16, rr = R % 16;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const float w = sm.m[tr][q][rr];
      const float4 v = *reinterpret_cast<const float4*>(&sm.u.o[tr][q][rr][d]);
      acc.x += w * v.x;
      acc.y += w * v.y;
      acc.z += w * v.z;
      acc.w += w * v.w;
    }
    const int64_t e = it.entry_start + r / G;
    const int hq = (h0 + R / used_rows) * G + r % G;
    *reinterpret_cast<float4*>(&a.plan.part_o[(e * nh + hq) * HD + d]) = acc;
  }
}

constexpr int kCombineCached = 512;  // entries per row whose ids and weights live in shared memory

// grid (n_rows, num_attention_heads), head_dim threads (64 or 128). Before pdl_wait: the row's
// entry ids (plan data, uploaded before the graph). Pass 1: the max of m over
// the row's entries; pass 2: weights 2^(m_e - max) (shared memory) and the denominator; pass 3:
// the weighted sum of the un-normalised outputs, entries independent so their loads overlap.
__global__ void attn_combine_kernel(AttnPlanView plan, int nh, int hd, bf16* out) {
  pdl_launch_dependents();
  __shared__ float w[kCombineCached];
  __shared__ int32_t ent[kCombineCached];
  __shared__ float red[4];
  const int t = plan.row_begin + blockIdx.x, hq = blockIdx.y, d = threadIdx.x;
  const int lane = d & 31, warp = d >> 5, n_warps = blockDim.x >> 5;
  const int e0 = plan.row_entry_ptr[t], n = plan.row_entry_ptr[t + 1] - e0;
  for (int k = d; k < n && k < kCombineCached; k += blockDim.x) ent[k] = plan.row_entries[e0 + k];
  __syncthreads();
  pdl_wait();
  auto entry = [&](int k) { return k < kCombineCached ? ent[k] : plan.row_entries[e0 + k]; };
  auto ml = [&](int k) { return plan.part_ml[int64_t(entry(k)) * nh + hq]; };

  float mx = -INFINITY;
  for (int k = d; k < n; k += blockDim.x) mx = fmaxf(mx, ml(k).x);
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  if (lane == 0) red[warp] = mx;
  __syncthreads();
  mx = red[0];
  for (int i = 1; i < n_warps; ++i) mx = fmaxf(mx, red[i]);
  __syncthreads();

  float den = 0.0f;
  for (int k = d; k < n; k += blockDim.x) {
    const float2 s = ml(k);
    const float wk = (s.x == -INFINITY || mx == -INFINITY) ? 0.0f : exp2f(s.x - mx);  // empty: 0
    if (k < kCombineCached) w[k] = wk;
    den += wk * s.y;
  }
  for (int o = 16; o > 0; o >>= 1) den += __shfl_xor_sync(0xffffffffu, den, o);
  if (lane == 0) red[warp] = den;
  __syncthreads();
  den = 0.0f;
  for (int i = 0; i < n_warps; ++i) den += red[i];

  float num = 0.0f;
  int k = 0;
  for (; k + 4 <= n && k + 4 <= kCombineCached; k += 4) {
    float o4[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) o4[u] = plan.part_o[(int64_t(ent[k + u]) * nh + hq) * hd + d];
#pragma unroll
    for (int u = 0; u < 4; ++u) num += w[k + u] * o4[u];
  }
  for (; k < n; ++k) {
    const float2 s = ml(k);
    const float wk = k < kCombineCached ? w[k] : ((s.x == -INFINITY) ? 0.0f : exp2f(s.x - mx));
    num += wk * plan.part_o[(int64_t(entry(k)) * nh + hq) * hd + d];
  }
  out[(int64_t(t) * nh + hq) * hd + d] = __float2bfloat16(den > 0.0f ? num / den : 0.0f);
  // sum_e 2^m_e d_e = 2^mx den (attention_scores.h reads it)
  if (plan.lse && d == 0) plan.lse[int64_t(t) * nh + hq] = den > 0.0f ? mx + log2f(den) : -INFINITY;
}

template <int HD>
void launch_partial(const PartialArgs& args, cudaStream_t stream) {
  const size_t smem = sizeof(Smem<HD>);
  static bool configured = false;  // per template instance; the attribute is per-function
  if (!configured) {
    HOGWILD_CUDA_CHECK(cudaFuncSetAttribute(attn_partial_kernel<HD>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(smem)));
    configured = true;
  }
  launch_pdl(attn_partial_kernel<HD>, dim3(args.plan.max_units), dim3(kThreads), smem, stream,
             args);
}

}  // namespace

void hogwild_attention(const bf16* q, const AttnShape& shape, const bf16* layer_pool,
                       const KvLayout& layout, const RopeTableView& rope, const AttnPlanView& plan,
                       bf16* out, cudaStream_t stream, const AttnAppend* append) {
  HOGWILD_CUDA_REQUIRE(shape.head_dim == 64 || shape.head_dim == 128);
  HOGWILD_CUDA_REQUIRE(layout.head_dim == shape.head_dim);
  HOGWILD_CUDA_REQUIRE(shape.num_key_value_heads > 0 &&
                       shape.num_attention_heads % shape.num_key_value_heads == 0);
  HOGWILD_CUDA_REQUIRE(shape.num_attention_heads / shape.num_key_value_heads <= kAttnMaxRows);
  HOGWILD_CUDA_REQUIRE(layout.num_key_value_heads == shape.num_key_value_heads);
  HOGWILD_CUDA_REQUIRE(rope.rotary_dim <= shape.head_dim && rope.rotary_dim % 2 == 0);
  if (plan.n_rows == 0) return;
  if (plan.max_units > 0) {
    PartialArgs args{q, shape, layer_pool, layout, rope, plan, AttnAppend{}, append != nullptr};
    if (append) {
      HOGWILD_CUDA_REQUIRE(append->pool == layer_pool &&
                           (append->w_q == nullptr) == (append->w_k == nullptr) &&
                           rope.rotary_dim == shape.head_dim);
      args.append = *append;
    }
    if (shape.head_dim == 64)
      launch_partial<64>(args, stream);
    else
      launch_partial<128>(args, stream);
  }
  dim3 grid(plan.n_rows, shape.num_attention_heads);
  launch_pdl(attn_combine_kernel, grid, dim3(shape.head_dim), 0, stream, plan,
             shape.num_attention_heads, shape.head_dim, out);
}

}  // namespace hogwild::cuda
