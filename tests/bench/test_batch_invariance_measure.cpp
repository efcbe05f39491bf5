// bench::measure_batch_invariance (src/bench/decode_bench.h), the measurement behind `bench_cuda
// --invariance`: on the CPU backend, whose rows do not depend on the batch up to 64 rows
// (tests/cpu/test_batch_invariance.cpp), every token is the same and the logits equal bit for bit;
// on a backend that adds a constant to one logit whenever a forward holds several sequences, the
// measurement reports exactly the tokens that this changes.
#include <gtest/gtest.h>

#include <algorithm>

#include "bench/decode_bench.h"
#include "cpu/cpu_backend.h"
#include "tests/cpu/tiny_model.h"
#include "tests/hogwild/forwarding_backend.h"

namespace hogwild {
namespace {

ModelConfig measure_config() {
  ModelConfig c = test::tiny_config(test::tiny_moe_spec("qwen3_moe_top2"));
  c.vocab_size = 300;
  return c;
}

// Forwards to a CPU backend; in a forward with more than one view, the logit of token kBumped
// of every row gets kBump added (a stand-in for a kernel whose sums change with the batch).
class BatchDependent : public test::ForwardingBackend {
 public:
  static constexpr int32_t kBumped = 7;
  static constexpr float kBump = 1000.0f;
  using ForwardingBackend::ForwardingBackend;
  void logits_of(const ForwardBatch& batch, std::vector<float>& logits) override {
    inner_.forward(batch, logits);
    if (batch.views.size() < 2) return;
    const int64_t V = config().vocab_size;
    for (size_t r = 0; r * V < logits.size(); ++r) logits[r * V + kBumped] += kBump;
  }
};

TEST(BatchInvarianceMeasure, CpuBackendTokensAndLogitsAreTheSameAloneAndShared) {
  cpu::CpuBackend be(test::tiny_weights(measure_config(), 5));
  // 4 sessions x 8 prompt tokens: a 32-row prefill, within the CPU's invariant 64 rows
  const nlohmann::json r = bench::measure_batch_invariance(be, 4, 8, 12, 3);
  EXPECT_EQ(r["identical"], 12);
  EXPECT_EQ(r["identical_prefix"], 12);
  EXPECT_EQ(r["share_identical"], 1.0);
  EXPECT_EQ(r["prefill_logits_max_abs_diff"], 0.0);
  EXPECT_GT(r["prefill_logits_max_abs"].get<double>(), 0.0);
  EXPECT_EQ(r["tokens_alone"], r["tokens_shared"]);
  EXPECT_EQ(r["tokens_alone"].size(), 12u);
  EXPECT_EQ(be.live_blocks(), 0);
  EXPECT_EQ(be.kv_used_tokens(), 0);
  // the same seed, the same prompts and tokens
  EXPECT_EQ(bench::measure_batch_invariance(be, 4, 8, 12, 3)["tokens_alone"], r["tokens_alone"]);
}

TEST(BatchInvarianceMeasure, CountsTheTokensABatchDependentBackendChanges) {
  cpu::CpuBackend cpu(test::tiny_weights(measure_config(), 5));
  BatchDependent be(cpu);
  const int steps = 10;
  const nlohmann::json r = bench::measure_batch_invariance(be, 3, 6, steps, 9);
  const auto alone = r["tokens_alone"].get<std::vector<int32_t>>();
  const auto shared = r["tokens_shared"].get<std::vector<int32_t>>();
  ASSERT_EQ(static_cast<int>(alone.size()), steps);
  // shared: every row's logit kBumped is 1000 above the others, so greedy picks it every time
  EXPECT_EQ(shared, std::vector<int32_t>(steps, BatchDependent::kBumped));
  const int same =
      static_cast<int>(std::count(alone.begin(), alone.end(), BatchDependent::kBumped));
  EXPECT_LT(same, steps);  // the tiny model alone does not repeat token 7 throughout
  EXPECT_EQ(r["identical"], same);
  const int first =
      static_cast<int>(std::find_if(alone.begin(), alone.end(),
                                    [](int32_t t) { return t != BatchDependent::kBumped; }) -
                       alone.begin());
  EXPECT_EQ(r["identical_prefix"], first);
  EXPECT_DOUBLE_EQ(r["share_identical"].get<double>(), double(same) / steps);
  // |(x + 1000) - x| in float: 1000 within the rounding of x + 1000 (ulp 2^-4 near 1000)
  EXPECT_NEAR(r["prefill_logits_max_abs_diff"].get<double>(), 1000.0, 0.0625);
  EXPECT_EQ(cpu.live_blocks(), 0);
}

TEST(BatchInvarianceMeasure, RefusesEmptyRuns) {
  cpu::CpuBackend be(test::tiny_weights(measure_config(), 5));
  EXPECT_THROW(bench::measure_batch_invariance(be, 0, 8, 4, 1), Error);
  EXPECT_THROW(bench::measure_batch_invariance(be, 2, 0, 4, 1), Error);
  EXPECT_THROW(bench::measure_batch_invariance(be, 2, 8, 0, 1), Error);
}

}  // namespace
}  // namespace hogwild
