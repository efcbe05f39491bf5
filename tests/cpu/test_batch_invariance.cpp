// Batch invariance of the CPU backend: the logits of one row are bit for bit the same whether the
// row is forwarded alone or inside a batch of other rows (other workers' tokens in other blocks
// and views, multi-token feeds, rows with and without logits), for every batch size up to the
// skinny limit (64 rows), every position of the row in the batch, 1..3 threads, and for each
// instruction set of the skinny kernel this CPU has (cpu/skinny.h). For Qwen3-MoE models also
// whichever other rows share the experts of the row (each expert runs once over all its rows).
#include <gtest/gtest.h>

#include <cstring>

#include "cpu/cpu_backend.h"
#include "cpu/ops.h"
#include "cpu/parallel.h"
#include "cpu/skinny.h"
#include "tests/cpu/tiny_model.h"

namespace hogwild {
namespace {

using cpu::CpuBackend;

// Sizes that exercise the kernels' main loops and tails: hidden_size 80 = 5 x 16 lanes,
// intermediate_size 136 = 8 x 16 + 8, a vocabulary of 7 output tiles (cpu/skinny.cpp).
ModelConfig invariance_config(const test::TinySpec& spec) {
  ModelConfig c = test::tiny_config(spec);
  c.hidden_size = 80;
  c.intermediate_size = 136;
  c.head_dim = 16;
  c.vocab_size = 300;
  c.moe_intermediate_size = c.num_experts > 0 ? 40 : 0;  // 2 x 16 lanes + 8
  return c;
}

std::vector<uint32_t> bits(const float* p, int64_t n) {
  std::vector<uint32_t> b(n);
  std::memcpy(b.data(), p, sizeof(float) * n);
  return b;
}

class BatchInvariance : public ::testing::TestWithParam<test::TinySpec> {};

TEST_P(BatchInvariance, RowLogitsDoNotDependOnTheBatch) {
  const ModelConfig cfg = invariance_config(GetParam());
  const int V = static_cast<int>(cfg.vocab_size);
  CpuBackend be(test::tiny_weights(cfg, 31));
  test::TestRng rng(32);
  auto token = [&] { return static_cast<int32_t>(rng.next() % V); };
  std::vector<float> logits;

  // Shared history (a 40-token prompt) and 17 worker blocks with a few tokens each.
  const BlockId hist = be.new_block();
  ForwardBatch p;
  p.views = {{hist}};
  for (int i = 0; i < 40; ++i) p.tokens.push_back({token(), 0, hist, false});
  be.forward(p, logits);
  constexpr int kWorkers = 17;
  std::vector<BlockId> blk(kWorkers);
  ForwardBatch s;
  for (int w = 0; w < kWorkers; ++w) {
    blk[w] = be.new_block();
    s.views.push_back({hist, blk[w]});
    for (int i = 0; i < 1 + w % 4; ++i) s.tokens.push_back({token(), w, blk[w], false});
  }
  be.forward(s, logits);
  std::vector<int64_t> len0(kWorkers);
  for (int w = 0; w < kWorkers; ++w) len0[w] = be.block_len(blk[w]);

  // The row under test: worker 0 feeds one token; its view is [hist][blk 0]. Every batch puts the
  // others in their own blocks, with views that may show each other but never blk 0 (a view that
  // shows blk 0 changes what row 0 attends to: that is semantics, not invariance).
  const int32_t tok0 = token();
  auto view = [&](int w) {
    std::vector<BlockId> v = {hist};
    if (w > 1) v.push_back(blk[1 + (w * 7) % (kWorkers - 1)]);  // another worker's block
    v.push_back(blk[w]);
    return v;
  };
  // Forwards a batch of row 0 plus `others` rows at `pos`, returns row 0's logits and restores
  // the cache.
  auto row0 = [&](int others, int pos) {
    ForwardBatch fb;
    fb.views.push_back(view(0));
    std::vector<TokenInput> rest;
    for (int r = 0; r < others; ++r) {
      const int w = 1 + r % (kWorkers - 1);
      if (static_cast<int>(fb.views.size()) <= w) fb.views.push_back(view(w));
      rest.push_back({token(), w, blk[w], r % 3 != 1});
    }
    fb.tokens = rest;
    fb.tokens.insert(fb.tokens.begin() + std::min(pos, others), {tok0, 0, blk[0], true});
    be.forward(fb, logits);
    int64_t row = 0;
    for (int t = 0; t < std::min(pos, others); ++t) row += fb.tokens[t].want_logits;
    for (int w = 0; w < kWorkers; ++w) be.truncate_block(blk[w], len0[w]);
    return bits(logits.data() + row * V, V);
  };

  for (const char* isa : {"avx512", "avx2", "generic"}) {
    if (!cpu::select_skinny_isa(isa)) continue;
    cpu::set_num_threads(1);
    const std::vector<uint32_t> alone = row0(0, 0);
    for (int threads : {1, 2, 3}) {
      cpu::set_num_threads(threads);
      EXPECT_EQ(row0(0, 0), alone) << isa << ", alone, threads " << threads;
      for (int others = 2; others <= 16; ++others)
        for (int pos : {0, others / 2, others})
          EXPECT_EQ(row0(others, pos), alone)
              << isa << ", " << others << " other rows, at " << pos << ", threads " << threads;
      // The largest decode batch the skinny path takes: row 0 among 63 others.
      EXPECT_EQ(row0(cpu::kSkinnyMaxRows - 1, 40), alone) << isa << ", 64 rows";
    }
  }
  cpu::set_num_threads(2);
  // The instruction set chosen for this CPU, for the rest of the process.
  for (const char* isa : {"avx512", "avx2", "generic"})
    if (cpu::select_skinny_isa(isa)) break;
}

INSTANTIATE_TEST_SUITE_P(
    Archs, BatchInvariance,
    ::testing::Values(test::tiny_spec("qwen3_qknorm_gqa", Arch::qwen3, false, true, true, 4, 2, 16),
                      test::tiny_spec("qwen2_bias_mha", Arch::qwen2, true, false, false, 4, 4, 16),
                      test::tiny_moe_spec("qwen3_moe_top2"),
                      test::tiny_moe_spec("qwen3_moe_no_norm_dense_layer", false, {1})),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace hogwild
