// The hogwild attention kernel against a CPU reference built from the CPU twins
// (cpu::RopeTable::rotate, cpu::attn_partial / attn_state_merge): every query row of every worker
// against every block occurrence in its view, query rotated by p - o (times the attention factor),
// keys j <= p - o visible. Sweeps head_dim 64/128, GQA 1/4/5/8, 1-8 workers, block lengths
// 0/1/odd/long (>= 16k), multi-token inputs, repeated and invisible occurrences, chunk sizes and
// row-split launches.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <tuple>

#include "cpu/ops.h"
#include "cpu/rope.h"
#include "cuda/attention.h"
#include "cuda/attention_plan.h"
#include "cuda/rope.h"
#include "tests/cpu/tiny_model.h"
#include "tests/cuda/cuda_test_util.h"

namespace hogwild::test {
namespace {

using bf16 = __nv_bfloat16;
using cuda::kPageTokens;

struct Scenario {
  int64_t head_dim = 128, n_heads = 8, n_kv_heads = 2;
  std::vector<int64_t> block_len;                 // post-append lengths
  std::vector<std::vector<int32_t>> views;        // block indices per worker
  std::vector<std::pair<int32_t, int32_t>> rows;  // (worker, block-local index in the LAST block)
  bool yarn = false;
  float q_scale = 1.0f;
  int32_t chunk = 0;       // 0 = choose_chunk
  int64_t split_rows = 0;  // > 0: two launches [0, split) and [split, T)
  // > 0: one row, G = 1, one block; the keys of tile k get k * steer_log2 added to their scores
  // (in log2 units) so the running max jumps by more than the kernel's slack at every tile.
  float steer_log2 = 0.0f;
  // Forgotten key ranges per block (PlanBlock::gaps; empty or missing: none): no row attends to
  // them.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> gaps;
};

// The cos/sin table of positions [0, n) on the device, as the backend uploads it.
struct DeviceRope {
  std::unique_ptr<DeviceArray<float2>> cs;
  cuda::RopeTableView view;
  DeviceRope(cpu::RopeTable& rope, int32_t n) {
    rope.reserve(n);
    std::vector<float2> h;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t i = 0; i < rope.half(); ++i)
        h.push_back(make_float2(rope.cos(p)[i], rope.sin(p)[i]));
    cs = std::make_unique<DeviceArray<float2>>(h);
    view = {cs->p, n, static_cast<int32_t>(rope.params().rotary_dim)};
  }
};

// A HostPlan of rows [r0, r1) on the device with its partial-state buffers; the view's grid is
// extra_units larger than the unit count.
struct DevicePlan {
  std::vector<std::unique_ptr<DeviceArray<int32_t>>> keep;
  std::unique_ptr<DeviceArray<float>> part_o;
  std::unique_ptr<DeviceArray<float2>> part_ml;
  cuda::AttnPlanView view;
  DevicePlan(const cuda::HostPlan& hp, int64_t r0, int64_t r1, int64_t nh, int64_t hd,
             int32_t extra_units) {
    auto ints = [&](const void* p, size_t n_ints) {
      std::vector<int32_t> v(n_ints);
      if (n_ints) std::memcpy(v.data(), p, n_ints * 4);
      keep.push_back(std::make_unique<DeviceArray<int32_t>>(v));
      return keep.back()->p;
    };
    const int64_t entries = std::max<int64_t>(hp.n_entries, 1);
    part_o = std::make_unique<DeviceArray<float>>(entries * nh * hd);
    part_ml = std::make_unique<DeviceArray<float2>>(entries * nh);
    const int32_t n_units = static_cast<int32_t>(hp.units.size());
    view.items = reinterpret_cast<const cuda::AttnItem*>(
        ints(hp.items.data(), hp.items.size() * cuda::kAttnItemInts));
    view.units = reinterpret_cast<const cuda::AttnUnit*>(
        ints(hp.units.data(), hp.units.size() * cuda::kAttnUnitInts));
    view.n_units = ints(&n_units, 1);
    view.max_units = n_units + extra_units;
    view.pages = ints(hp.pages.data(), hp.pages.size());
    view.pairs =
        reinterpret_cast<const cuda::AttnPair*>(ints(hp.pairs.data(), hp.pairs.size() * 2));
    view.row_entry_ptr = ints(hp.row_entry_ptr.data(), hp.row_entry_ptr.size());
    view.row_entries = ints(hp.row_entries.data(), hp.row_entries.size());
    view.row_begin = static_cast<int32_t>(r0);
    view.n_rows = static_cast<int32_t>(r1 - r0);
    view.max_entries = hp.n_entries;
    view.part_o = part_o->p;
    view.part_ml = part_ml->p;
  }
};

// Runs the scenario on the GPU and the CPU reference; returns the worst per-row relative error.
double run_scenario(const Scenario& s, uint64_t seed) {
  TestRng rng(seed);
  const int64_t hd = s.head_dim, nh = s.n_heads, kvh = s.n_kv_heads, G = nh / kvh;
  ModelConfig c;
  c.head_dim = hd, c.num_attention_heads = nh, c.num_key_value_heads = kvh;
  c.hidden_size = nh * hd, c.rope_theta = 1e6, c.max_position_embeddings = 40960;
  if (s.yarn) {
    c.rope_scaling.rope_type = "yarn", c.rope_scaling.factor = 4.0;
    c.rope_scaling.original_max_position_embeddings = 4096;
  }
  cpu::RopeTable rope(cpu::compute_rope_params(c));
  const float factor = rope.params().attention_scaling;

  // Pages, shuffled so the kernel must follow the page lists.
  int64_t n_pages = 1;
  for (int64_t len : s.block_len) n_pages += (len + kPageTokens - 1) / kPageTokens;
  std::vector<int32_t> perm(n_pages);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(seed));
  std::vector<std::vector<int32_t>> pages(s.block_len.size());
  size_t next = 0;
  for (size_t b = 0; b < s.block_len.size(); ++b)
    for (int64_t i = 0; i < (s.block_len[b] + kPageTokens - 1) / kPageTokens; ++i)
      pages[b].push_back(perm[next++]);
  cuda::KvLayout L{n_pages, static_cast<int32_t>(kvh), static_cast<int32_t>(hd)};
  auto pool = round_bf16(rng.vec(L.layer_elems(), 1.0f));

  // Rows: view position p = offset of the worker's last block + index.
  cuda::PlanInput pin;
  // fresh_from mid-block: the kernel loads the tiles before it ahead of pdl_wait, the rest after.
  for (size_t b = 0; b < s.block_len.size(); ++b) {
    pin.blocks.push_back({s.block_len[b], &pages[b], s.block_len[b] / 2});
    if (b < s.gaps.size() && !s.gaps[b].empty()) pin.blocks.back().gaps = &s.gaps[b];
  }
  pin.views.resize(s.views.size());
  std::vector<int64_t> last_off(s.views.size());
  for (size_t w = 0; w < s.views.size(); ++w) {
    int64_t off = 0;
    for (int32_t b : s.views[w]) {
      pin.views[w].push_back({b, off});
      last_off[w] = off;
      off += s.block_len[b];
    }
  }
  const int64_t T = static_cast<int64_t>(s.rows.size());
  for (auto [w, j] : s.rows) {
    pin.row_worker.push_back(w);
    pin.row_pos.push_back(last_off[w] + j);
  }
  pin.group = static_cast<int32_t>(G);
  pin.kv_heads = static_cast<int32_t>(kvh);
  pin.chunk = s.chunk ? s.chunk
                      : cuda::choose_chunk(
                            std::accumulate(s.block_len.begin(), s.block_len.end(), int64_t(0)), T,
                            kvh, 264);
  const int64_t stride = (nh + 2 * kvh) * hd;
  const auto q = round_bf16(rng.vec(T * stride, s.q_scale));
  rope.reserve(20000);
  if (s.steer_log2 > 0) {
    // Key j of tile k += c_k q_rot / |q_rot|^2 with c_k = k steer_log2 / (scale log2(e)): its score
    // against the row's rotated query rises by k steer_log2 in log2 units. The rise is the same for
    // every key of a tile, so the bf16 rounding of the kernel's rotated query moves a tile's scores
    // together and the softmax within the last tile stays as accurate as in the other scenarios.
    EXPECT_TRUE(T == 1 && G == 1 && s.block_len.size() == 1) << "steer_log2 needs one row";
    const int64_t limit = pin.row_pos[0] - pin.views[pin.row_worker[0]][0].offset;
    const double dot_per_log2 = std::sqrt(double(hd)) / 1.4426950408889634;
    for (int64_t h = 0; h < kvh; ++h) {
      std::vector<float> qr(q.begin() + h * hd, q.begin() + (h + 1) * hd);
      rope.rotate(qr.data(), 1, limit, factor);
      double norm2 = 0;
      for (float v : qr) norm2 += double(v) * v;
      for (int64_t j = 0; j < s.block_len[0]; ++j) {
        const double c = double(j / kPageTokens) * s.steer_log2 * dot_per_log2;
        const int64_t slot = int64_t(pages[0][j / kPageTokens]) * kPageTokens + j % kPageTokens;
        float* k = &pool[L.slot_offset(slot, 0, h)];
        for (int64_t d = 0; d < hd; ++d) k[d] += static_cast<float>(c * qr[d] / norm2);
      }
    }
    pool = round_bf16(pool);
  }

  // GPU.
  const DeviceRope drope(rope, 20000);
  const cuda::RopeTableView rv = drope.view;
  DeviceArray<bf16> dpool(to_bf16(pool)), dq(to_bf16(q)), dout(T * nh * hd);
  HOGWILD_CUDA_CHECK(cudaMemset(dout.p, 0xff, T * nh * hd * 2));  // poison (NaN)
  std::vector<std::pair<int64_t, int64_t>> ranges = {{0, T}};
  if (s.split_rows > 0) ranges = {{0, s.split_rows}, {s.split_rows, T}};
  cuda::AttnShape shape{static_cast<int32_t>(nh),    static_cast<int32_t>(kvh),
                        static_cast<int32_t>(hd),    stride,
                        1.0f / std::sqrt(float(hd)), factor};
  for (auto [r0, r1] : ranges) {
    // grid larger than the count: extra CTAs must exit
    const DevicePlan dp(cuda::build_plan(pin, r0, r1), r0, r1, nh, hd, 3);
    cuda::hogwild_attention(dq.p, shape, dpool.p, L, rv, dp.view, dout.p, nullptr);
    HOGWILD_CUDA_CHECK(cudaDeviceSynchronize());
  }
  const auto got = to_f32(dout.download());

  // CPU reference: contiguous fp32 keys/values per (block, kv head).
  auto kv = [&](int32_t b, int kind, int64_t h) {
    std::vector<float> out(s.block_len[b] * hd);
    for (int64_t j = 0; j < s.block_len[b]; ++j) {
      const int64_t slot = int64_t(pages[b][j / kPageTokens]) * kPageTokens + j % kPageTokens;
      std::copy_n(&pool[L.slot_offset(slot, kind, h)], hd, &out[j * hd]);
    }
    return out;
  };
  std::vector<std::vector<float>> K(s.block_len.size() * kvh), V(s.block_len.size() * kvh);
  for (size_t b = 0; b < s.block_len.size(); ++b)
    for (int64_t h = 0; h < kvh; ++h) {
      K[b * kvh + h] = kv(static_cast<int32_t>(b), 0, h);
      V[b * kvh + h] = kv(static_cast<int32_t>(b), 1, h);
    }
  double worst = 0;
  std::vector<float> o(hd), qr(hd), want(hd);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t hq = 0; hq < nh; ++hq) {
      cpu::AttnState st{0, 0, o.data()};
      cpu::attn_state_init(st, hd);
      for (const auto& oc : pin.views[pin.row_worker[t]]) {
        const int64_t limit = pin.row_pos[t] - oc.offset;
        const int64_t n = std::min(limit + 1, s.block_len[oc.block]);
        if (n <= 0) continue;
        std::copy_n(&q[t * stride + hq * hd], hd, qr.data());
        rope.rotate(qr.data(), 1, limit, factor);
        // The kept runs [k0, k1) of keys below n (the block's gaps skipped).
        const std::vector<std::pair<int64_t, int64_t>> none;
        const auto& gaps = oc.block < static_cast<int32_t>(s.gaps.size()) ? s.gaps[oc.block] : none;
        for (int64_t k0 = 0; k0 < n;) {
          int64_t k1 = n;
          bool skip = false;
          for (const auto& [gb, ge] : gaps) {
            if (k0 >= gb && k0 < ge) skip = true, k1 = ge;
            if (gb > k0) k1 = std::min(k1, gb);
          }
          if (!skip)
            cpu::attn_partial(qr.data(), K[oc.block * kvh + hq / G].data() + k0 * hd,
                              V[oc.block * kvh + hq / G].data() + k0 * hd, k1 - k0, hd, hd,
                              1.0f / std::sqrt(float(hd)), st);
          k0 = std::min(k1, n);
        }
      }
      cpu::attn_state_normalize(st, want.data(), hd);
      worst = std::max(worst, rel_error(&got[(t * nh + hq) * hd], want.data(), hd));
    }
  }
  return worst;
}

// Combined layout of docs/ARCHITECTURE.md §3: [shared] [other steps...] [own step]; blocks 1..W are
// the workers' steps, each worker feeds `n_new` tokens at the end of its step.
Scenario combined(int64_t hd, int64_t G, int W, int64_t shared, std::vector<int64_t> step_lens,
                  int n_new = 1, int64_t kvh = 2) {
  Scenario s;
  s.head_dim = hd, s.n_kv_heads = kvh, s.n_heads = kvh * G;
  s.block_len.push_back(shared);
  for (int w = 0; w < W; ++w) s.block_len.push_back(step_lens[w % step_lens.size()] + n_new);
  for (int w = 0; w < W; ++w) {
    std::vector<int32_t> v = {0};
    for (int o = 0; o < W; ++o)
      if (o != w) v.push_back(1 + o);
    v.push_back(1 + w);
    s.views.push_back(v);
    for (int k = 0; k < n_new; ++k)
      s.rows.push_back({w, static_cast<int32_t>(s.block_len[1 + w] - n_new + k)});
  }
  return s;
}

constexpr double kTol = 1e-2;  // bf16 operands (q, k, v, probabilities), fp32 accumulation

TEST(CudaAttention, GqaAndHeadDimSweep) {
  HOGWILD_REQUIRE_GPU();
  uint64_t seed = 10;
  for (int64_t hd : {64, 128})
    for (int64_t G : {1, 4, 5, 8}) {
      const Scenario s = combined(hd, G, 3, 300, {0, 1, 65});
      EXPECT_LT(run_scenario(s, ++seed), kTol) << "hd " << hd << " G " << G;
    }
}

TEST(CudaAttention, WorkerCountSweep) {
  HOGWILD_REQUIRE_GPU();
  uint64_t seed = 20;
  for (int W : {1, 2, 4, 5, 8}) {
    const Scenario s = combined(128, 4, W, 1000, {7, 0, 130, 63, 64});
    EXPECT_LT(run_scenario(s, ++seed), kTol) << "workers " << W;
  }
}

// A row whose scores rise by 12 log2 units at every 64-key tile of one chunk: the running max moves
// at every tile (past the kernel's slack of 8), so the state (l, O) is rescaled with a finite
// previous max each time. A missing or wrong rescale weighs the earlier tiles 2^12 too much.
TEST(CudaAttention, RunningMaxJumpsRescaleTheState) {
  HOGWILD_REQUIRE_GPU();
  uint64_t seed = 140;
  for (int64_t hd : {64, 128}) {
    Scenario s;
    s.head_dim = hd, s.n_heads = 2, s.n_kv_heads = 2;
    s.block_len = {300};  // 5 tiles, the last one partial
    s.views = {{0}};
    s.rows = {{0, 299}};
    s.chunk = 320;  // one item: every tile through the same CTA's running max
    s.steer_log2 = 12.0f;
    EXPECT_LT(run_scenario(s, ++seed), kTol) << "hd " << hd;
  }
}

TEST(CudaAttention, EmptyAndTinyBlocksAndPeakySoftmax) {
  HOGWILD_REQUIRE_GPU();
  Scenario s = combined(64, 5, 4, 1, {0});
  s.block_len.push_back(0);  // an empty block occurring in every view
  for (auto& v : s.views) v.insert(v.begin() + 1, static_cast<int32_t>(s.block_len.size() - 1));
  s.q_scale = 6.0f;  // large scores: one key dominates
  EXPECT_LT(run_scenario(s, 31), kTol);
}

TEST(CudaAttention, LongSharedBlockSplitK) {
  HOGWILD_REQUIRE_GPU();
  for (int64_t G : {5, 8}) {
    Scenario s = combined(128, G, 2, 16500, {33});
    s.yarn = true;  // attention factor != 1 on every rotated query
    EXPECT_LT(run_scenario(s, 40 + G), kTol) << "G " << G;
  }
  // 256-key chunks: 65 partial states per row for the combine to merge.
  Scenario s = combined(128, 8, 2, 16500, {33});
  s.chunk = 256;
  EXPECT_LT(run_scenario(s, 48), kTol) << "chunk 256";
}

TEST(CudaAttention, MultiTokenInputsManyRowsAndRowSplit) {
  HOGWILD_REQUIRE_GPU();
  for (int64_t hd : {64, 128}) {
    Scenario s = combined(hd, 4, 2, 200, {0}, 1);
    // worker 0 feeds 100 tokens (a prompt piece), worker 1 feeds 3
    s.block_len[1] = 100;
    s.rows.clear();
    for (int j = 0; j < 100; ++j) s.rows.push_back({0, j});
    s.block_len[2] = 5;
    for (int j = 2; j < 5; ++j) s.rows.push_back({1, j});
    EXPECT_LT(run_scenario(s, 50 + hd), kTol) << "hd " << hd;
    s.split_rows = 37;
    EXPECT_LT(run_scenario(s, 60 + hd), kTol) << "split hd " << hd;
    s.split_rows = 0;
    s.chunk = 128;
    EXPECT_LT(run_scenario(s, 70 + hd), kTol) << "chunk 128 hd " << hd;
  }
}

TEST(CudaAttention, PromptPrefillEveryGqaRatio) {
  HOGWILD_REQUIRE_GPU();
  uint64_t seed = 90;
  for (int64_t hd : {64, 128})
    for (int64_t G : {1, 2, 3, 4, 5, 8})
      for (int64_t kvh : {1, 2}) {
        Scenario s;  // one worker, one block, 40 new tokens (a prompt), causal
        s.head_dim = hd, s.n_kv_heads = kvh, s.n_heads = kvh * G;
        s.block_len = {40};
        s.views = {{0}};
        for (int j = 0; j < 40; ++j) s.rows.push_back({0, j});
        EXPECT_LT(run_scenario(s, ++seed), kTol) << "hd " << hd << " G " << G << " kvh " << kvh;
      }
}

TEST(CudaAttention, RepeatedSeparatorAndInvisibleOccurrences) {
  HOGWILD_REQUIRE_GPU();
  Scenario s;
  s.head_dim = 128, s.n_heads = 8, s.n_kv_heads = 2;
  s.block_len = {150, 2, 40, 11, 70};  // shared, sep, step A, own, later block
  // sep occurs twice; block 4 follows the own block: its keys sit after p and must stay invisible
  s.views = {{0, 1, 2, 1, 3}, {0, 3, 1, 2, 4, 2}};
  s.rows = {{0, 9}, {0, 10}, {1, 38}, {1, 39}};
  EXPECT_LT(run_scenario(s, 80), kTol);
  s.chunk = 64;
  EXPECT_LT(run_scenario(s, 81), kTol);
}

// The K/V append fused into the attention (AttnAppend, decode steps) against the separate
// kernels: qk_norm_kv_append (or kv_append without q/k norm) then the attention. Workers feed
// n_new tokens each at the end of their steps, shared by the other workers' views. The fused path
// must write the same bits into the pool (the new keys' slots start as NaN) and give the same
// attention output bit for bit: same arithmetic in the same order (the unfused path itself is
// checked against the CPU reference by the tests above).
void check_fused_append(int64_t hd, int64_t G, int W, int n_new, bool qk_norm, uint64_t seed,
                        int64_t kv_heads = 2) {
  TestRng rng(seed);
  Scenario s = combined(hd, G, W, 300, {7, 0, 65}, n_new, kv_heads);
  const int64_t nh = s.n_heads, kvh = s.n_kv_heads, T = static_cast<int64_t>(s.rows.size());
  ModelConfig c;
  c.head_dim = hd, c.num_attention_heads = nh, c.num_key_value_heads = kvh;
  c.hidden_size = nh * hd, c.rope_theta = 1e6, c.max_position_embeddings = 40960;
  c.rope_scaling.rope_type = "yarn", c.rope_scaling.factor = 4.0;  // attention factor != 1
  c.rope_scaling.original_max_position_embeddings = 4096;
  cpu::RopeTable rope(cpu::compute_rope_params(c));
  const float factor = rope.params().attention_scaling;
  const DeviceRope drope(rope, 2048);
  const cuda::RopeTableView rv = drope.view;

  int64_t n_pages = 0;
  std::vector<std::vector<int32_t>> pages(s.block_len.size());
  for (size_t b = 0; b < s.block_len.size(); ++b)
    for (int64_t i = 0; i < (s.block_len[b] + kPageTokens - 1) / kPageTokens; ++i)
      pages[b].push_back(static_cast<int32_t>(n_pages++));
  cuda::KvLayout L{n_pages, static_cast<int32_t>(kvh), static_cast<int32_t>(hd)};
  std::vector<bf16> pool = to_bf16(rng.vec(L.layer_elems(), 1.0f));
  const int64_t stride = (nh + 2 * kvh) * hd;
  const auto qkv = to_bf16(rng.vec(T * stride, 2.0f));
  std::vector<float> wq(hd), wk(hd);
  for (int64_t d = 0; d < hd; ++d) {
    wq[d] = 1.0f + rng.uniform(0.5f);
    wk[d] = 1.0f + rng.uniform(0.3f);
  }
  DeviceArray<bf16> dwq(to_bf16(wq)), dwk(to_bf16(wk));

  // Rows (worker-major, n_new each) append to their worker's step block: key j <-> pos j.
  cuda::PlanInput pin;
  std::vector<int32_t> pos(T), slot(T);
  pin.blocks.push_back({s.block_len[0], &pages[0]});
  for (int w = 0; w < W; ++w) {
    const int64_t len = s.block_len[1 + w];
    pin.blocks.push_back({len, &pages[1 + w], len - n_new, int64_t(w) * n_new});
    for (int k = 0; k < n_new; ++k) {
      const int64_t t = int64_t(w) * n_new + k, j = len - n_new + k;
      pos[t] = static_cast<int32_t>(j);
      slot[t] = pages[1 + w][j / kPageTokens] * kPageTokens + static_cast<int32_t>(j % kPageTokens);
      for (int kind = 0; kind < 2; ++kind)  // the new keys' slots hold NaN until written
        for (int64_t h = 0; h < kvh; ++h)
          for (int64_t d = 0; d < hd; ++d)
            pool[L.slot_offset(slot[t], kind, h) + d] = __float2bfloat16(NAN);
    }
  }
  pin.views.resize(W);
  std::vector<int64_t> last_off(W);
  for (int w = 0; w < W; ++w) {
    int64_t off = 0;
    for (int32_t b : s.views[w]) {
      pin.views[w].push_back({b, off});
      last_off[w] = off;
      off += s.block_len[b];
    }
  }
  for (auto [w, j] : s.rows) {
    pin.row_worker.push_back(w);
    pin.row_pos.push_back(last_off[w] + j);
  }
  pin.group = static_cast<int32_t>(G);
  pin.kv_heads = static_cast<int32_t>(kvh);
  pin.chunk = 128;  // the shared block in 3 chunks
  pin.split_fresh = true;
  const DevicePlan dp(cuda::build_plan(pin, 0, T), 0, T, nh, hd, 0);
  const cuda::AttnPlanView& v = dp.view;
  const cuda::AttnShape shape{static_cast<int32_t>(nh),    static_cast<int32_t>(kvh),
                              static_cast<int32_t>(hd),    stride,
                              1.0f / std::sqrt(float(hd)), factor};
  const float eps = 1e-6f;

  // Separate kernels.
  DeviceArray<bf16> pool_a(pool), qkv_a(qkv), out_a(T * nh * hd);
  DeviceArray<int32_t> dpos(pos), dslot(slot);
  if (qk_norm)
    cuda::qk_norm_kv_append(qkv_a.p, stride, nh, T, dwq.p, dwk.p, eps, dpos.p, dslot.p, pool_a.p, L,
                            rv, factor, nullptr);
  else
    cuda::kv_append(qkv_a.p, stride, nh * hd, (nh + kvh) * hd, T, dpos.p, dslot.p, pool_a.p, L, rv,
                    factor, nullptr);
  cuda::hogwild_attention(qkv_a.p, shape, pool_a.p, L, rv, v, out_a.p, nullptr);
  // Fused.
  DeviceArray<bf16> pool_b(pool), qkv_b(qkv), out_b(T * nh * hd);
  cuda::AttnAppend app;
  app.pool = pool_b.p;
  app.w_q = qk_norm ? dwq.p : nullptr;
  app.w_k = qk_norm ? dwk.p : nullptr;
  app.eps = eps;
  app.k_col = nh * hd;
  app.v_col = (nh + kvh) * hd;
  cuda::hogwild_attention(qkv_b.p, shape, pool_b.p, L, rv, v, out_b.p, nullptr, &app);
  HOGWILD_CUDA_CHECK(cudaDeviceSynchronize());

  const auto pa = pool_a.download(), pb = pool_b.download();
  int64_t pool_diff = 0;
  for (size_t i = 0; i < pa.size(); ++i)
    pool_diff += std::memcmp(&pa[i], &pb[i], sizeof(bf16)) != 0;
  EXPECT_EQ(pool_diff, 0) << "pool elements that differ";
  const auto oa = out_a.download(), ob = out_b.download();
  int64_t out_diff = 0;
  for (size_t i = 0; i < oa.size(); ++i) out_diff += std::memcmp(&oa[i], &ob[i], sizeof(bf16)) != 0;
  EXPECT_EQ(out_diff, 0) << "attention outputs that differ";
  // Sanity of the reference path itself: every output finite, the new keys' slots written.
  for (size_t i = 0; i < ob.size(); ++i) ASSERT_TRUE(std::isfinite(__bfloat162float(ob[i]))) << i;
  for (int64_t t = 0; t < T; ++t)
    ASSERT_TRUE(std::isfinite(__bfloat162float(pb[L.slot_offset(slot[t], 0, 0)]))) << t;
}

// The KV budget's gaps: forgotten ranges of the shared block (at its start, inside a tile, across
// tile and chunk boundaries, to a tile's end) and of a step block are skipped by every row, in
// one-tile items, in chunks of several tiles whose first tile starts mid-way (key_from), and
// with chunks of every size.
TEST(CudaAttention, ForgottenRangesAreSkippedInEveryOccurrence) {
  HOGWILD_REQUIRE_GPU();
  uint64_t seed = 900;
  for (int64_t hd : {64, 128})
    for (int32_t chunk : {0, 64, 256}) {
      Scenario s = combined(hd, 4, 3, 300, {40, 70}, 2);
      s.gaps = {{{0, 1}, {10, 75}, {130, 131}, {190, 256}, {290, 300}}, {{3, 20}}, {}, {{0, 30}}};
      s.chunk = chunk;
      EXPECT_LT(run_scenario(s, ++seed), kTol) << "head_dim " << hd << " chunk " << chunk;
      // The shared block twice in a view, its second occurrence partly visible.
      Scenario r;
      r.head_dim = hd, r.n_heads = 8, r.n_kv_heads = 2;
      r.block_len = {150, 30};
      r.views = {{0, 1, 0}};
      r.rows = {{0, 100}, {0, 140}, {0, 149}};
      r.gaps = {{{5, 9}, {63, 65}, {120, 150}}};
      r.chunk = chunk;
      EXPECT_LT(run_scenario(r, ++seed), kTol) << "head_dim " << hd << " chunk " << chunk;
    }
}

TEST(CudaAttention, FusedAppendMatchesSeparateKernels) {
  HOGWILD_REQUIRE_GPU();
  uint64_t seed = 200;
  for (int64_t hd : {64, 128})
    for (int64_t G : {4, 5})
      for (int n_new : {1, 3})
        for (bool norm : {true, false}) {
          SCOPED_TRACE(::testing::Message() << "hd " << hd << " G " << G << " n_new " << n_new
                                            << (norm ? " q/k norm" : " no norm"));
          check_fused_append(hd, G, 3, n_new, norm, ++seed);
        }
  SCOPED_TRACE("8 workers, 1 new token each");
  check_fused_append(128, 4, 8, 1, true, 300);
}

// Units of several KV heads (AttnUnit): the workers' one-tile steps with 8 or 5 KV heads, rows of
// 1-4 row tiles (4, 2 or 1 heads per CTA, and a last unit of fewer heads), against the CPU
// reference, and the fused append against the separate kernels.
TEST(CudaAttention, OneTileItemsShareCtasAcrossKvHeads) {
  HOGWILD_REQUIRE_GPU();
  uint64_t seed = 400;
  for (int64_t kvh : {8, 5})
    for (int64_t hd : {64, 128})
      for (auto [G, W] : {std::pair<int64_t, int>{1, 3}, {4, 3}, {5, 3}, {8, 4}, {4, 12}, {8, 8}}) {
        SCOPED_TRACE(::testing::Message()
                     << "kv heads " << kvh << " hd " << hd << " G " << G << " workers " << W);
        const Scenario s = combined(hd, G, W, 300, {0, 1, 40, 63}, 1, kvh);
        EXPECT_LT(run_scenario(s, ++seed), kTol);
        check_fused_append(hd, G, W, G == 1 ? 3 : 1, true, ++seed, kvh);
      }
}

}  // namespace
}  // namespace hogwild::test
