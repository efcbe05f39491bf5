// The Qwen3-MoE block of the CPU backend (cpu/moe.h, cpu::moe_route): routing computed by hand
// (softmax, top-k, renormalisation, ties), the grouping of rows by expert, the block against a
// plain per-row loop, and bad input.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "cpu/cpu_backend.h"
#include "cpu/moe.h"
#include "cpu/ops.h"
#include "tests/cpu/tiny_model.h"

namespace hogwild {
namespace {

// Router logits of 4 rows over 4 experts, chosen so that the softmax is a ratio of small integers:
// exp(log(n)) = n (to within fp32 rounding).
//   row 0: exp = 1 2 3 4   -> p = .1 .2 .3 .4        top-2: 3 (.4), 2 (.3)
//   row 1: exp = 2 1 2 1   -> p = 1/3 1/6 1/3 1/6    top-2: 0, 2 (a tie inside the top-2)
//   row 2: exp = 3 1 1 1   -> p = 1/2 1/6 1/6 1/6    top-2: 0, then the tie 1 = 2 = 3 -> 1
//   row 3: exp = 1 1 1 5   -> p = 1/8 1/8 1/8 5/8    top-2: 3, then the tie 0 = 1 = 2 -> 0
std::vector<float> hand_logits() {
  auto l = [](double n) { return static_cast<float>(std::log(n)); };
  return {l(1), l(2), l(3), l(4), l(2), l(1), l(2), l(1),
          l(3), l(1), l(1), l(1), l(1), l(1), l(1), l(5)};
}

TEST(MoeRoute, HandComputedWithAndWithoutRenormalisation) {
  const std::vector<float> logits = hand_logits();
  std::vector<int32_t> e(8);
  std::vector<float> w(8);
  // norm_topk_prob: the two chosen probabilities divided by their sum.
  cpu::moe_route(logits.data(), 4, 4, 2, /*norm_topk_prob=*/true, e.data(), w.data());
  EXPECT_EQ(e, (std::vector<int32_t>{3, 2, 0, 2, 0, 1, 3, 0}));
  const std::vector<double> norm = {4.0 / 7, 3.0 / 7, 0.5, 0.5, 0.75, 0.25, 5.0 / 6, 1.0 / 6};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(w[i], norm[i], 1e-6) << i;
  // Without: the softmax probabilities themselves.
  cpu::moe_route(logits.data(), 4, 4, 2, /*norm_topk_prob=*/false, e.data(), w.data());
  EXPECT_EQ(e, (std::vector<int32_t>{3, 2, 0, 2, 0, 1, 3, 0}));
  const std::vector<double> raw = {0.4, 0.3, 1.0 / 3, 1.0 / 3, 0.5, 1.0 / 6, 5.0 / 8, 1.0 / 8};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(w[i], raw[i], 1e-6) << i;
  // k = E: every expert, by probability; renormalised they are the softmax (sum 1).
  std::vector<int32_t> all(4);
  std::vector<float> wa(4);
  cpu::moe_route(logits.data(), 1, 4, 4, true, all.data(), wa.data());
  EXPECT_EQ(all, (std::vector<int32_t>{3, 2, 1, 0}));
  EXPECT_NEAR(wa[0] + wa[1] + wa[2] + wa[3], 1.0, 1e-6);
  // k = 1 renormalised: weight exactly 1.
  cpu::moe_route(logits.data() + 8, 1, 4, 1, true, all.data(), wa.data());
  EXPECT_EQ(all[0], 0);
  EXPECT_EQ(wa[0], 1.0f);
}

TEST(MoeRoute, BadInput) {
  const std::vector<float> logits = hand_logits();
  std::vector<int32_t> e(8);
  std::vector<float> w(8);
  EXPECT_THROW(cpu::moe_route(logits.data(), 4, 4, 5, true, e.data(), w.data()), Error);
  EXPECT_THROW(cpu::moe_route(logits.data(), 4, 4, 0, true, e.data(), w.data()), Error);
  // A non-finite logit: NaN weights (the output is NaN, as a dense MLP's), never a crash.
  std::vector<float> bad = {1.0f, std::nanf(""), 0.0f, 2.0f};
  cpu::moe_route(bad.data(), 1, 4, 2, true, e.data(), w.data());
  EXPECT_TRUE(std::isnan(w[0]) && std::isnan(w[1]));
  EXPECT_NE(e[0], e[1]);
}

TEST(MoeGroups, EachTouchedExpertOnceWithItsRowsInOrder) {
  // Rows 0..3 of the hand-computed routing (norm_topk_prob).
  const std::vector<float> logits = hand_logits();
  std::vector<int32_t> e(8);
  std::vector<float> w(8);
  cpu::moe_route(logits.data(), 4, 4, 2, true, e.data(), w.data());
  const cpu::ExpertGroups g = cpu::group_by_expert(e.data(), w.data(), 4, 2, 4);
  EXPECT_EQ(g.expert, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(g.begin, (std::vector<int64_t>{0, 3, 4, 6, 8}));
  EXPECT_EQ(g.row, (std::vector<int64_t>{1, 2, 3, 2, 0, 1, 0, 3}));
  EXPECT_NEAR(g.weight[0], 0.5, 1e-6);      // row 1, expert 0
  EXPECT_NEAR(g.weight[2], 1.0 / 6, 1e-6);  // row 3, expert 0
  EXPECT_NEAR(g.weight[6], 4.0 / 7, 1e-6);  // row 0, expert 3
  // An expert no row chose is absent.
  const std::vector<int32_t> two = {2, 0, 0, 2};
  const std::vector<float> ones(4, 1.0f);
  const cpu::ExpertGroups h = cpu::group_by_expert(two.data(), ones.data(), 2, 2, 4);
  EXPECT_EQ(h.expert, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(h.row, (std::vector<int64_t>{0, 1, 0, 1}));
  // Bad routing is an error.
  const std::vector<int32_t> out_of_range = {0, 4}, twice = {1, 1};
  EXPECT_THROW(cpu::group_by_expert(out_of_range.data(), ones.data(), 1, 2, 4), Error);
  EXPECT_THROW(cpu::group_by_expert(twice.data(), ones.data(), 1, 2, 4), Error);
}

// moe_mlp against a plain loop over rows and their k experts (fp32 as the reference, sum in
// increasing expert index): a few rows, 4 experts, k = 2, with and without renormalisation.
// Each row against a double-precision loop over its two experts: its own top-2, or (forced) the
// two least probable, which moe_mlp must run when told to while it still reports the top-2.
TEST(MoeMlp, EqualsPerRowLoop) {
  for (bool norm : {true, false})
    for (bool force : {false, true}) {
      test::TinySpec spec = test::tiny_moe_spec("m", norm);
      spec.n_experts = 4;
      const ModelConfig c = test::tiny_config(spec);
      const ModelWeights w = test::tiny_weights(c, 5);
      const LayerWeights& L = w.layers[0];
      ASSERT_TRUE(c.is_moe_layer(0));
      const int64_t H = c.hidden_size, MI = c.moe_intermediate_size, T = 7;
      test::TestRng r(6);
      const std::vector<float> x = r.vec(T * H, 1.0f);
      std::vector<float> out(T * H);
      // the two least probable experts of each row: router logits in double, as below
      std::vector<int32_t> least(T * 2);
      for (int64_t t = 0; t < T; ++t) {
        std::vector<std::pair<double, int32_t>> l(4);
        for (int e = 0; e < 4; ++e) {
          double s = 0;
          for (int64_t i = 0; i < H; ++i) s += double(L.router[e * H + i]) * x[t * H + i];
          l[e] = {s, e};
        }
        std::sort(l.begin(), l.end());
        least[t * 2] = l[0].second, least[t * 2 + 1] = l[1].second;
      }
      cpu::MoeTrace trace;
      cpu::moe_mlp(c, L, x.data(), T, out.data(), &trace, force ? least.data() : nullptr);
      const cpu::ExpertGroups& g = trace.groups;
      // Every expert index once at most, and every (row, k) pair placed once.
      EXPECT_EQ(g.begin.back(), T * 2);
      for (size_t i = 1; i < g.expert.size(); ++i) EXPECT_LT(g.expert[i - 1], g.expert[i]);
      EXPECT_GE(g.expert.size(), 2u) << "the test routing should touch several experts";
      for (int64_t t = 0; t < T; ++t) {
        const float* xt = x.data() + t * H;
        std::vector<double> p(4);
        for (int e = 0; e < 4; ++e) {
          double s = 0;
          for (int64_t i = 0; i < H; ++i) s += double(L.router[e * H + i]) * xt[i];
          p[e] = s;
        }
        const double mx = *std::max_element(p.begin(), p.end());
        double den = 0;
        for (double& v : p) den += (v = std::exp(v - mx));
        int a = -1, b = -1;  // the two most probable
        for (int e = 0; e < 4; ++e)
          if (a < 0 || p[e] > p[a]) a = e;
        for (int e = 0; e < 4; ++e)
          if (e != a && (b < 0 || p[e] > p[b])) b = e;
        EXPECT_EQ(std::min(trace.chosen[t * 2], trace.chosen[t * 2 + 1]), std::min(a, b));
        EXPECT_EQ(std::max(trace.chosen[t * 2], trace.chosen[t * 2 + 1]), std::max(a, b));
        if (force) a = least[t * 2], b = least[t * 2 + 1];
        const double sum = norm ? p[a] + p[b] : den;
        std::vector<double> ref(H, 0.0);
        for (int e = 0; e < 4; ++e) {
          if (e != a && e != b) continue;
          const ExpertWeights& X = L.experts[e];
          std::vector<double> act(MI);
          for (int64_t j = 0; j < MI; ++j) {
            double gt = 0, up = 0;
            for (int64_t i = 0; i < H; ++i) {
              gt += double(X.gate_proj[j * H + i]) * xt[i];
              up += double(X.up_proj[j * H + i]) * xt[i];
            }
            act[j] = gt / (1 + std::exp(-gt)) * up;
          }
          for (int64_t i = 0; i < H; ++i) {
            double y = 0;
            for (int64_t j = 0; j < MI; ++j) y += double(X.down_proj[i * MI + j]) * act[j];
            ref[i] += p[e] / sum * y;
          }
        }
        for (int64_t i = 0; i < H; ++i)
          EXPECT_NEAR(out[t * H + i], ref[i], 1e-5 * (1 + std::abs(ref[i]))) << t << " " << i;
      }
    }
}

TEST(MoeMlp, BackendChecksTheExpertTensors) {
  const ModelConfig c = test::tiny_config(test::tiny_moe_spec("m"));
  auto expect_names = [](ModelWeights w, const std::string& what) {
    try {
      cpu::CpuBackend be(std::move(w));
      FAIL() << "expected an error naming " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  ModelWeights w = test::tiny_weights(c, 1);
  w.layers[2].experts[5].down_proj.pop_back();
  expect_names(std::move(w), "model.layers.2.mlp.experts.5.down_proj.weight");
  w = test::tiny_weights(c, 1);
  w.layers[0].router.clear();
  expect_names(std::move(w), "model.layers.0.mlp.gate.weight");
  w = test::tiny_weights(c, 1);
  w.layers[1].experts.pop_back();
  expect_names(std::move(w), "layer 1 has 5 experts");
  w = test::tiny_weights(c, 1);
  w.config.num_experts_per_tok = 7;
  expect_names(std::move(w), "num_experts_per_tok (7)");
}

}  // namespace
}  // namespace hogwild
