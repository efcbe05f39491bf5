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

#include "cpu/ops.h"
#include "cpu/rope.h"
#include "cuda/attention.h"
#include "cuda/attention_plan.h"
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
  const auto pool = round_bf16(rng.vec(L.layer_elems(), 1.0f));

  // Rows: view position p = offset of the worker's last block + index.
  cuda::PlanInput pin;
  // fresh_from mid-block: the kernel loads the tiles before it ahead of pdl_wait, the rest after.
  for (size_t b = 0; b < s.block_len.size(); ++b)
    pin.blocks.push_back({s.block_len[b], &pages[b], s.block_len[b] / 2});
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
  pin.chunk = s.chunk ? s.chunk
                      : cuda::choose_chunk(
                            std::accumulate(s.block_len.begin(), s.block_len.end(), int64_t(0)), T,
                            kvh, 264);
  const int64_t stride = (nh + 2 * kvh) * hd;
  const auto q = round_bf16(rng.vec(T * stride, s.q_scale));

  // GPU.
  cuda::RopeTableView rv;
  std::vector<float2> cs;
  rope.reserve(20000);
  for (int64_t p = 0; p < 20000; ++p)
    for (int64_t i = 0; i < rope.half(); ++i)
      cs.push_back(make_float2(rope.cos(p)[i], rope.sin(p)[i]));
  DeviceArray<float2> dcs(cs);
  rv = {dcs.p, 20000, static_cast<int32_t>(rope.params().rotary_dim)};
  DeviceArray<bf16> dpool(to_bf16(pool)), dq(to_bf16(q)), dout(T * nh * hd);
  HOGWILD_CUDA_CHECK(cudaMemset(dout.p, 0xff, T * nh * hd * 2));  // poison (NaN)
  std::vector<std::pair<int64_t, int64_t>> ranges = {{0, T}};
  if (s.split_rows > 0) ranges = {{0, s.split_rows}, {s.split_rows, T}};
  cuda::AttnShape shape{static_cast<int32_t>(nh),    static_cast<int32_t>(kvh),
                        static_cast<int32_t>(hd),    stride,
                        1.0f / std::sqrt(float(hd)), factor};
  std::vector<std::unique_ptr<DeviceArray<int32_t>>> keep;
  auto dev_ints = [&](const void* p, size_t n_ints) {
    std::vector<int32_t> v(n_ints);
    if (n_ints) std::memcpy(v.data(), p, n_ints * 4);
    keep.push_back(std::make_unique<DeviceArray<int32_t>>(v));
    return keep.back()->p;
  };
  for (auto [r0, r1] : ranges) {
    const cuda::HostPlan hp = cuda::build_plan(pin, r0, r1);
    DeviceArray<float> part_o(std::max<int64_t>(hp.n_entries, 1) * nh * hd);
    DeviceArray<float2> part_ml(std::max<int64_t>(hp.n_entries, 1) * nh);
    const int32_t n_items = static_cast<int32_t>(hp.items.size());
    cuda::AttnPlanView v;
    v.items = reinterpret_cast<const cuda::AttnItem*>(
        dev_ints(hp.items.data(), hp.items.size() * cuda::kAttnItemInts));
    v.n_items = dev_ints(&n_items, 1);
    v.max_items = n_items + 3;  // grid larger than the count: extra CTAs must exit
    v.pages = dev_ints(hp.pages.data(), hp.pages.size());
    v.pairs =
        reinterpret_cast<const cuda::AttnPair*>(dev_ints(hp.pairs.data(), hp.pairs.size() * 2));
    v.row_entry_ptr = dev_ints(hp.row_entry_ptr.data(), hp.row_entry_ptr.size());
    v.row_entries = dev_ints(hp.row_entries.data(), hp.row_entries.size());
    v.row_begin = static_cast<int32_t>(r0);
    v.n_rows = static_cast<int32_t>(r1 - r0);
    v.max_entries = hp.n_entries;
    v.part_o = part_o.p;
    v.part_ml = part_ml.p;
    cuda::hogwild_attention(dq.p, shape, dpool.p, L, rv, v, dout.p, nullptr);
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
        cpu::attn_partial(qr.data(), K[oc.block * kvh + hq / G].data(),
                          V[oc.block * kvh + hq / G].data(), n, hd, hd, 1.0f / std::sqrt(float(hd)),
                          st);
      }
      cpu::attn_state_normalize(st, want.data(), hd);
      worst = std::max(worst, rel_error(&got[(t * nh + hq) * hd], want.data(), hd));
    }
  }
  return worst;
}

// Combined layout of docs/DESIGN.md §3: [shared] [other steps...] [own step]; blocks 1..W are the
// workers' steps, each worker feeds `n_new` tokens at the end of its step.
Scenario combined(int64_t hd, int64_t G, int W, int64_t shared, std::vector<int64_t> step_lens,
                  int n_new = 1) {
  Scenario s;
  s.head_dim = hd, s.n_kv_heads = 2, s.n_heads = 2 * G;
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

// Host-only (runs without a GPU): each item carries its block's fresh_from, clamped to the block
// length, so the kernel loads only tiles of keys older than this forward before pdl_wait.
TEST(AttentionPlan, ItemsCarryTheirBlocksFreshFrom) {
  const std::vector<int32_t> pages_a = {3, 1, 4, 0}, pages_b = {2};
  cuda::PlanInput pin;
  pin.blocks.push_back({200, &pages_a, 198});  // two tokens appended by this forward
  pin.blocks.push_back({10, &pages_b});        // default: nothing appended
  pin.views = {{{0, 0}, {1, 200}}};
  pin.row_worker = {0, 0};
  pin.row_pos = {208, 209};
  pin.group = 4;
  pin.chunk = 64;
  const cuda::HostPlan hp = cuda::build_plan(pin, 0, 2);
  ASSERT_EQ(hp.items.size(), 5u);  // block 0: chunks of 64 -> 4 items; block 1: 1 item
  int from_a = 0, from_b = 0;
  for (const cuda::AttnItem& it : hp.items) {
    if (it.page_base == 0) {
      EXPECT_EQ(it.fresh_from, 198) << "key_start " << it.key_start;
      ++from_a;
    } else {
      EXPECT_EQ(it.fresh_from, 10);
      ++from_b;
    }
  }
  EXPECT_EQ(from_a, 4);
  EXPECT_EQ(from_b, 1);
}

}  // namespace
}  // namespace hogwild::test
