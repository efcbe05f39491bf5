// R-KV's redundancy term of the KV budget (hogwild/forgetting.h combined_scores,
// ForgetPolicy::redundancy_weight; Backend::key_redundancy): the combination against hand-computed
// cases, the CPU backend's measure against a naive computation from the stored keys, the request
// checks' sentences, and whole sessions: with the weight 0 nothing is measured and the run is the
// one without the term; with a weight every forward still matches the naive reference told to
// forget the same tokens.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "cpu/cpu_backend.h"
#include "hogwild/forgetting.h"
#include "hogwild/request_check.h"
#include "tests/hogwild/session_checker.h"
#include "tests/hogwild/test_support.h"

namespace hogwild::testing {
namespace {

using Ranges = std::vector<TokenRange>;

// 24 history tokens in chunks of 4: the prompt [0, 4) protected, [20, 24) recent. Candidates and
// their importance (the largest score of their tokens): A [4, 8) 0.30, B [8, 12) 0.20,
// C [12, 16) 0.25, D [16, 20) 0.50.
std::vector<float> hand_scores() {
  std::vector<float> s(24, 0.01f);
  s[5] = 0.30f, s[9] = 0.20f, s[14] = 0.25f, s[18] = 0.50f;
  s[1] = 0.0f, s[22] = 0.0f;  // the prompt and the recent tokens: kept however low
  return s;
}
// Redundancy of A, B, C, D (mean cosine to the others): C repeats the others most.
const std::vector<float> kHandRedundancy = {0.1f, -0.2f, 0.9f, 0.3f};

TEST(KvRedundancyChoice, CandidatesAreTheChunksThatMayGo) {
  const ForgetPolicy p{.budget = 20, .chunk = 4, .recent = 4};
  const auto c = forget_candidates(24, {{9, 12}}, {{0, 4}}, p);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0].begin, 4);
  EXPECT_EQ(c[1].begin, 8);
  EXPECT_EQ(c[1].kept, 1);  // [9, 12) already forgotten
  EXPECT_EQ(c[3].begin, 16);
  EXPECT_EQ(forget_candidates(24, {{8, 12}}, {{0, 4}}, p).size(), 3u);  // wholly forgotten
}

// Min-max over the candidates: importance (x - 0.20) / 0.30 -> A 1/3, B 0, C 1/6, D 1;
// redundancy (x + 0.2) / 1.1 -> A 3/11, B 0, C 1, D 5/11. With w = 0.5, 0.5 * imp - 0.5 * red:
// A 0.5 * (1/3 - 3/11) = 1/33 = 0.0303, B 0, C 0.5 * (1/6 - 1) = -5/12 = -0.4167,
// D 0.5 * (1 - 5/11) = 3/11 = 0.2727.
TEST(KvRedundancyChoice, CombinedScoresAreMinMaxScaledThenWeighted) {
  const std::vector<float> imp = {0.30f, 0.20f, 0.25f, 0.50f};
  const std::vector<float> s = combined_scores(imp, kHandRedundancy, 0.5);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_NEAR(s[0], 1.0 / 33, 1e-6);
  EXPECT_NEAR(s[1], 0.0, 1e-6);
  EXPECT_NEAR(s[2], -5.0 / 12, 1e-6);
  EXPECT_NEAR(s[3], 3.0 / 11, 1e-6);
  // All equal: both scale to 0. Unmeasured importance (+inf) stays +inf; the others scale over
  // the finite values (0.2 and 0.4 -> 0 and 1).
  EXPECT_EQ(combined_scores({0.1f, 0.1f}, {0.5f, 0.5f}, 0.9), (std::vector<float>{0.0f, 0.0f}));
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> u = combined_scores({0.2f, inf, 0.4f}, {0.f, 1.f, 0.f}, 0.5);
  EXPECT_FLOAT_EQ(u[0], 0.0f);
  EXPECT_EQ(u[1], inf);
  EXPECT_FLOAT_EQ(u[2], 0.5f);
  EXPECT_THROW(combined_scores({0.1f}, {}, 0.5), Error);
}

// Budget 20 of 24: one chunk goes. Importance alone (w = 0) drops B, the least attended; with
// w = 0.5 C goes (-5/12, the lowest above), B next (budget 16: both); with w = 0.1 the scores are
// 0.9 * imp - 0.1 * red: A 0.2727, B 0, C 0.05, D 0.8545, and B goes again.
TEST(KvRedundancyChoice, RedundancyChangesWhichChunkGoes) {
  const Ranges protect = {{0, 4}};
  ForgetPolicy p{.budget = 20, .chunk = 4, .recent = 4};
  EXPECT_EQ(choose_forgotten(24, {}, protect, hand_scores(), p), (Ranges{{8, 12}}));
  // The weight 0 ignores the redundancy given (any, even of another length).
  EXPECT_EQ(choose_forgotten(24, {}, protect, hand_scores(), p, {9.f}), (Ranges{{8, 12}}));
  p.redundancy_weight = 0.5;
  EXPECT_EQ(choose_forgotten(24, {}, protect, hand_scores(), p, kHandRedundancy),
            (Ranges{{12, 16}}));
  p.budget = 16;
  EXPECT_EQ(choose_forgotten(24, {}, protect, hand_scores(), p, kHandRedundancy),
            (Ranges{{8, 12}, {12, 16}}));
  p.budget = 20;
  p.redundancy_weight = 0.1;
  EXPECT_EQ(choose_forgotten(24, {}, protect, hand_scores(), p, kHandRedundancy),
            (Ranges{{8, 12}}));
  p.redundancy_weight = 0.5;
  EXPECT_THROW(choose_forgotten(24, {}, protect, hand_scores(), p, {0.f, 0.f}), Error);
}

// Equal combined scores: the older chunk first, as without the term; an unmeasured chunk (+inf)
// stays however redundant, and protected or recent chunks are never candidates.
TEST(KvRedundancyChoice, TiesGoToTheOlderChunkAndUnmeasuredChunksStay) {
  ForgetPolicy p{.budget = 20, .chunk = 4, .recent = 4, .redundancy_weight = 0.9};
  std::vector<float> flat(24, 0.1f);
  EXPECT_EQ(choose_forgotten(24, {}, {{0, 4}}, flat, p, {0.3f, 0.3f, 0.3f, 0.3f}),
            (Ranges{{4, 8}}));
  flat[5] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(choose_forgotten(24, {}, {{0, 4}}, flat, p, {1.f, 0.f, 0.f, 0.f}), (Ranges{{8, 12}}));
}

// R-KV's redundancy, naively: per layer and KV head, each chunk's kept keys normalised and
// averaged, the mean normalised; the full cosine matrix with its diagonal left out; each row's
// mean over the other chunks; averaged over layers and heads.
std::vector<double> naive_redundancy(const Backend& be, BlockId b, const Ranges& chunks,
                                     const Ranges& gaps) {
  const ModelConfig& c = be.config();
  const int64_t hd = c.head_dim, nkv = c.num_key_value_heads;
  const size_t n = chunks.size();
  std::vector<double> out(n, 0.0);
  auto kept = [&](int64_t j) {
    for (const auto& g : gaps)
      if (j >= g.first && j < g.second) return false;
    return true;
  };
  auto unit = [](std::vector<double>& x) {
    double ss = 0;
    for (double v : x) ss += v * v;
    if (ss > 0)
      for (double& v : x) v /= std::sqrt(ss);
  };
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    std::vector<float> k, v;
    be.read_block(b, l, k, v);
    for (int64_t h = 0; h < nkv; ++h) {
      std::vector<std::vector<double>> key(n, std::vector<double>(hd, 0.0));
      for (size_t i = 0; i < n; ++i) {
        for (int64_t j = chunks[i].first; j < chunks[i].second; ++j) {
          if (!kept(j)) continue;
          std::vector<double> x(k.begin() + (j * nkv + h) * hd, k.begin() + (j * nkv + h + 1) * hd);
          unit(x);
          for (int64_t d = 0; d < hd; ++d) key[i][d] += x[d];
        }
        unit(key[i]);
      }
      for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j) {
          if (i == j) continue;
          double dot = 0;
          for (int64_t d = 0; d < hd; ++d) dot += key[i][d] * key[j][d];
          out[i] +=
              dot / static_cast<double>(n - 1) / static_cast<double>(nkv * c.num_hidden_layers);
        }
    }
  }
  return out;
}

TEST(KvRedundancyBackend, CpuMatchesTheNaiveComputationFromTheKeys) {
  for (const auto& spec : session_specs()) {
    SCOPED_TRACE(spec.name);
    cpu::CpuBackend be(session_model(spec));
    const BlockId b = be.new_block();
    be.fill_block_random(b, 40, 11);
    be.forget_tokens(b, 5, 9);    // part of two chunks
    be.forget_tokens(b, 16, 24);  // a whole chunk: its key is zero
    const Ranges chunks = {{0, 8}, {8, 16}, {16, 24}, {24, 32}, {32, 40}, {36, 40}};
    const std::vector<float> got = be.key_redundancy(b, chunks);
    const std::vector<double> want = naive_redundancy(be, b, chunks, {{5, 9}, {16, 24}});
    ASSERT_EQ(got.size(), chunks.size());
    for (size_t i = 0; i < chunks.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-5) << "chunk " << i;
      EXPECT_LE(std::abs(got[i]), 1.0f);
    }
    EXPECT_EQ(got[2], 0.0f);    // nothing kept
    EXPECT_GT(got[5], got[0]);  // [36, 40) lies inside [32, 40): alike
    EXPECT_EQ(be.key_redundancy(b, {{0, 8}}), std::vector<float>{0.0f});  // a lone chunk
    EXPECT_THROW(be.key_redundancy(b, {{0, 8}, {32, 41}}), Error);
    EXPECT_THROW(be.key_redundancy(b + 1, {{0, 8}}), Error);
  }
}

TEST(KvRedundancyRequest, BadValuesAreRefusedWithTheirSentence) {
  auto message = [](double w, int64_t budget, KvPolicy p) {
    try {
      check_kv_redundancy(w, budget, p);
    } catch (const RequestError& e) {
      EXPECT_EQ(e.field(), RequestField::kv_redundancy);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string range =
      "; it must be in [0, 1] (the weight of key redundancy against attention in what evict "
      "forgets, R-KV's 1 - lambda; 0 = off)";
  EXPECT_EQ(message(1.5, 1000, KvPolicy::evict), "kv_redundancy is 1.5" + range);
  EXPECT_EQ(message(-0.1, 1000, KvPolicy::evict), "kv_redundancy is -0.1" + range);
  EXPECT_EQ(message(std::nan(""), 1000, KvPolicy::evict), "kv_redundancy is nan" + range);
  EXPECT_EQ(message(0.9, 0, KvPolicy::evict),
            "kv_redundancy is 0.9, but there is no kv_budget: redundancy ranks what a budget "
            "forgets; give a kv_budget, or drop kv_redundancy");
  EXPECT_EQ(message(0.9, 1000, KvPolicy::summarise),
            "kv_redundancy is 0.9, but kv_policy summarise forgets what a summary sums up, not "
            "the least useful chunks; drop kv_redundancy, or use kv_policy evict");
  EXPECT_EQ(message(0.0, 0, KvPolicy::summarise), "no error");
  EXPECT_EQ(message(1.0, 1000, KvPolicy::evict), "no error");
}

// The CPU backend, counting its redundancy measures; or, with `refuse`, one that has none.
class CountingBackend : public cpu::CpuBackend {
 public:
  explicit CountingBackend(ModelWeights w, bool refuse = false)
      : CpuBackend(std::move(w)), refuse_(refuse) {}
  std::vector<float> key_redundancy(BlockId b, const Ranges& chunks) const override {
    ++calls;
    return CpuBackend::key_redundancy(b, chunks);
  }
  bool measures_redundancy() const override { return !refuse_; }
  mutable int calls = 0;

 private:
  bool refuse_;
};

// A small budget as in test_kv_budget.cpp (the last 8 tokens kept, a 4-step window), with room
// for a choice: token chunks and 48 tokens beyond the prompt and the recent ones, so that the
// history passes the budget with more candidates than must go (in the scripted runs most of the
// history is protected step openings; with less room every candidate goes and the order, hence
// the redundancy, is moot and not measured).
ForgetPolicy small_budget(double weight) {
  const int64_t prompt =
      static_cast<int64_t>(ByteCodec().encode("Task: add 2 and 3, then double it.\n\n").size());
  return {
      .budget = prompt + 8 + 48, .chunk = 1, .recent = 8, .window = 4, .redundancy_weight = weight};
}

// Weight 0 (the default, with which test_kv_budget.cpp and test_kv_memory.cpp run): nothing is
// measured, and every forward matches the reference that forgets the same tokens.
TEST(KvRedundancySession, WeightZeroMeasuresNothing) {
  const auto spec = session_specs().front();
  CountingBackend be(session_model(spec));
  const CheckedRun o = run_checked(be, be.weights(), Layout::combined, 2, small_budget(0.0));
  expect_matches_reference(o, Layout::combined, 1e-4, 1e-4);
  EXPECT_GT(o.forgotten, 0);
  EXPECT_EQ(be.calls, 0);
}

// The term changes what a session forgets: the same scripted run (2 workers), w = 0 against
// w = 0.9.
TEST(KvRedundancySession, TheWeightChangesWhatIsForgotten) {
  auto forgotten = [](double w, int& calls) {
    CountingBackend be(session_model(session_specs().front()));
    Ranges all;
    for (const ForgetEvent& e :
         run_checked(be, be.weights(), Layout::combined, 2, small_budget(w)).res.forgotten)
      all.insert(all.end(), e.ranges.begin(), e.ranges.end());
    calls = be.calls;
    return all;
  };
  int plain_calls = 0, calls = 0;
  const Ranges plain = forgotten(0.0, plain_calls), redundant = forgotten(0.9, calls);
  EXPECT_FALSE(plain.empty());
  EXPECT_NE(plain, redundant);
  EXPECT_EQ(plain_calls, 0);
  EXPECT_GT(calls, 0);
}

TEST(KvRedundancySession, ABackendWithoutTheMeasureIsRefusedUpFront) {
  CountingBackend be(session_model(session_specs().front()), /*refuse=*/true);
  ByteCodec codec;
  Formatting f = test_formatting(7);
  ScriptPicker picker({worker_script(0)});
  SessionOptions opt;
  opt.n_workers = 1;
  opt.kv = small_budget(0.9);
  try {
    Session s(be, codec, f, opt, picker);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "--kv-redundancy 0.9 needs a backend that measures key redundancy, and this one "
              "cannot: run on the CPU or CUDA backend, or with --kv-redundancy 0");
  }
}

using Param = std::tuple<test::TinySpec, Layout, int>;
class KvRedundancyVsReference : public ::testing::TestWithParam<Param> {};

// With the term (w = 0.9, R-KV's lambda 0.1) every forward's logits still match the naive
// reference that forgets the same history tokens, and the redundancy was measured (2 and 4
// workers: in the scripted one-worker run every candidate has to go, so nothing is measured).
TEST_P(KvRedundancyVsReference, ReplayHoldsOnTheViewsThatRemain) {
  auto [spec, layout, n] = GetParam();
  CountingBackend be(session_model(spec));
  const ForgetPolicy kv = small_budget(0.9);
  const CheckedRun o = run_checked(be, be.weights(), layout, n, kv);
  expect_matches_reference(o, layout, 1e-4, 1e-4);
  EXPECT_GT(o.forgotten, 0);
  EXPECT_EQ(o.forgotten, o.res.forgotten_tokens);
  EXPECT_GT(be.calls, 0);
  for (const ForgetEvent& e : o.res.forgotten)
    for (const auto& [b, end] : e.ranges) {
      EXPECT_LE(end, e.history_len - kv.recent);
      EXPECT_EQ(b % kv.chunk, 0);
      EXPECT_EQ(end % kv.chunk, 0);
    }
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  auto& [spec, layout, n] = info.param;
  return spec.name + "_" + layout_name(layout) + "_w" + std::to_string(n);
}

INSTANTIATE_TEST_SUITE_P(Archs, KvRedundancyVsReference,
                         ::testing::Combine(::testing::ValuesIn(session_specs()),
                                            ::testing::Values(Layout::combined,
                                                              Layout::interleaved),
                                            ::testing::Values(2, 4)),
                         param_name);

}  // namespace
}  // namespace hogwild::testing
