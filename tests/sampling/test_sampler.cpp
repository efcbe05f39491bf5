// Sampler and generation_config.json against hand-computed distributions (HF logits-processor
// semantics, transformers/generation/logits_process.py).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/error.h"
#include "sampling/generation_config.h"
#include "sampling/sampler.h"

namespace hogwild {
namespace {

std::vector<float> log_probs(const std::vector<double>& p) {
  std::vector<float> l;
  for (double x : p) l.push_back(static_cast<float>(std::log(x)));
  return l;
}

void expect_probs(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "token " << i;
}

SamplingParams sampling(float temperature = 1.0f, int64_t top_k = 0, float top_p = 1.0f,
                        float min_p = 0.0f, float rep = 1.0f) {
  SamplingParams p;
  p.do_sample = true;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  p.repetition_penalty = rep;
  return p;
}

TEST(Rng, Xoshiro256StarStarReferenceValues) {
  // splitmix64-seeded xoshiro256**, seed 42; values from a direct python transcription of the
  // reference C code: 0x15780b2e0c2ec716 0x6104d9866d113a7e 0xae17533239e499a1.
  Rng r(42);
  EXPECT_EQ(r.next(), 0x15780b2e0c2ec716ULL);
  EXPECT_EQ(r.next(), 0x6104d9866d113a7eULL);
  EXPECT_EQ(r.next(), 0xae17533239e499a1ULL);
}

TEST(Sampler, RepetitionPenaltyDividesPositiveMultipliesNegative) {
  // [2, -1, 0.5, 3], context {0, 1, 1}, penalty 2 -> [1, -2, 0.5, 3] (each distinct id once).
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  Sampler s(p);
  std::vector<float> l = {2, -1, 0.5f, 3};
  const std::vector<int32_t> ctx = {0, 1, 1};
  s.process(l, ctx);
  EXPECT_EQ(l, (std::vector<float>{1, -2, 0.5f, 3}));
  // Greedy after the penalty: [3, -1, 0.5, 2.9] with context {0} -> [1.5, ...]: argmax 3.
  EXPECT_EQ(s.sample(std::vector<float>{3, -1, 0.5f, 2.9f}, std::vector<int32_t>{0}), 3);
}

TEST(Sampler, TemperatureScalesLogits) {
  // softmax([1,2,3] / 0.5) = [0.015876239976466765, 0.11731042782619835, 0.8668133321973348]
  Sampler s(sampling(0.5f));
  expect_probs(s.probabilities(std::vector<float>{1, 2, 3}, {}),
               {0.015876239976466765, 0.11731042782619835, 0.8668133321973348});
}

TEST(Sampler, TopKKeepsTiesWithTheKth) {
  Sampler k2(sampling(1.0f, 2));
  std::vector<float> l = {1, 3, 2, 3, 0};
  k2.process(l, {});
  const float ninf = -INFINITY;
  EXPECT_EQ(l, (std::vector<float>{ninf, 3, ninf, 3, ninf}));
  Sampler k3(sampling(1.0f, 3));
  l = {1, 3, 2, 3, 0};
  k3.process(l, {});
  EXPECT_EQ(l, (std::vector<float>{ninf, 3, 2, 3, ninf}));
}

TEST(Sampler, TopPRemovesTheLowTail) {
  // p = [.5 .3 .15 .05]; ascending cumsum .05 .2 .5 1.
  // top_p .75: remove cum <= .25 -> {.5, .3} -> [.625 .375 0 0]
  Sampler a(sampling(1.0f, 0, 0.75f));
  expect_probs(a.probabilities(log_probs({.5, .3, .15, .05}), {}), {.625, .375, 0, 0});
  // top_p .9: remove cum <= .1 -> {.5 .3 .15} / .95
  Sampler b(sampling(1.0f, 0, 0.9f));
  expect_probs(b.probabilities(log_probs({.5, .3, .15, .05}), {}),
               {.5 / .95, .3 / .95, .15 / .95, 0});
  // A tiny top_p keeps the most likely token.
  Sampler c(sampling(1.0f, 0, 0.01f));
  expect_probs(c.probabilities(log_probs({.5, .3, .15, .05}), {}), {1, 0, 0, 0});
}

TEST(Sampler, MinPRelativeToTheTopProbability) {
  // min_p .2 * p_max .5 = .1: removes .05 -> {.5 .3 .15} / .95
  Sampler s(sampling(1.0f, 0, 1.0f, 0.2f));
  expect_probs(s.probabilities(log_probs({.5, .3, .15, .05}), {}),
               {.5 / .95, .3 / .95, .15 / .95, 0});
}

TEST(Sampler, HfOrderTopKBeforeTopP) {
  // p = [.4 .3 .2 .1], top_k 3 -> [4/9 3/9 2/9]; then top_p .75 removes cum <= .25 (2/9)
  // -> [4/7 3/7 0 0]. (top-p first would give [4/9 3/9 2/9 0].)
  Sampler s(sampling(1.0f, 3, 0.75f));
  expect_probs(s.probabilities(log_probs({.4, .3, .2, .1}), {}), {4.0 / 7, 3.0 / 7, 0, 0});
}

TEST(Sampler, GreedyIgnoresWarpers) {
  SamplingParams p = sampling(0.1f, 1, 0.1f, 0.5f);
  p.do_sample = false;
  Sampler s(p);
  std::vector<float> l = {1, 3, 2};
  s.process(l, {});
  EXPECT_EQ(l, (std::vector<float>{1, 3, 2}));  // untouched: HF applies warpers only when sampling
  EXPECT_EQ(s.sample(l, {}), 1);
  Sampler t0(sampling(0.0f));                                   // temperature 0 = greedy
  EXPECT_EQ(t0.sample(std::vector<float>{5, 1, 7, 7}, {}), 2);  // first maximal index
}

TEST(Sampler, SeededDrawsFollowTheDistributionAndReproduce) {
  const std::vector<float> l = log_probs({.5, .3, .2});
  Sampler a(sampling()), b(sampling());
  std::vector<int> count(3);
  for (int i = 0; i < 20000; ++i) {
    const int32_t x = a.sample(l, {});
    EXPECT_EQ(x, b.sample(l, {}));
    ++count[x];
  }
  EXPECT_NEAR(count[0] / 20000.0, .5, .015);
  EXPECT_NEAR(count[1] / 20000.0, .3, .015);
  EXPECT_NEAR(count[2] / 20000.0, .2, .015);
  SamplingParams other = sampling();
  other.seed = 7;
  Sampler c(other);
  int same = 0;
  Sampler a2(sampling());
  for (int i = 0; i < 100; ++i) same += a2.sample(l, {}) == c.sample(l, {});
  EXPECT_LT(same, 100);
}

TEST(Sampler, BannedTokensAndErrors) {
  SamplingParams p;
  p.banned_tokens = {2};
  Sampler s(p);
  EXPECT_EQ(s.sample(std::vector<float>{1, 2, 9}, {}), 1);
  p.banned_tokens = {0, 1, 2};
  Sampler all(p);
  EXPECT_THROW(all.sample(std::vector<float>{1, 2, 9}, {}), Error);
  EXPECT_THROW(Sampler(sampling(1.0f, -1)), Error);
  EXPECT_THROW(Sampler(sampling(1.0f, 0, 0.0f)), Error);
  EXPECT_THROW(Sampler(sampling(1.0f, 0, 1.0f, 1.5f)), Error);
  EXPECT_THROW(Sampler(sampling(1.0f, 0, 1.0f, 0.0f, 0.0f)), Error);
  EXPECT_THROW(Sampler(sampling(-1.0f)), Error);
  EXPECT_THROW(Sampler(sampling(std::numeric_limits<float>::infinity())), Error);
  EXPECT_THROW(Sampler(sampling(std::numeric_limits<float>::quiet_NaN())), Error);
  EXPECT_NO_THROW(Sampler(sampling(0.0f)));  // 0 = greedy
}

TEST(GenerationConfig, DefaultsAndValues) {
  const GenerationConfig d = parse_generation_config(nlohmann::json::object());
  EXPECT_FALSE(d.do_sample);
  EXPECT_EQ(d.temperature, 1.0);
  EXPECT_EQ(d.top_k, 50);
  EXPECT_EQ(d.top_p, 1.0);
  EXPECT_EQ(d.min_p, 0.0);
  EXPECT_EQ(d.repetition_penalty, 1.0);
  EXPECT_FALSE(d.max_new_tokens.has_value());
  EXPECT_EQ(d.max_length, 20);
  // Qwen3-0.6B's generation_config.json.
  const auto q = parse_generation_config(nlohmann::json::parse(R"({
    "bos_token_id": 151643, "do_sample": true, "eos_token_id": [151645, 151643],
    "pad_token_id": 151643, "temperature": 0.6, "top_k": 20, "top_p": 0.95,
    "transformers_version": "4.51.0"})"));
  EXPECT_TRUE(q.do_sample);
  EXPECT_EQ(q.temperature, 0.6);
  EXPECT_EQ(q.top_k, 20);
  EXPECT_EQ(q.top_p, 0.95);
  EXPECT_EQ(q.eos_token_id, (std::vector<int64_t>{151645, 151643}));
  const auto one =
      parse_generation_config(nlohmann::json::parse(R"({"eos_token_id": 2, "min_p": null,
    "max_new_tokens": 64, "repetition_penalty": 1.1})"));
  EXPECT_EQ(one.eos_token_id, (std::vector<int64_t>{2}));
  EXPECT_EQ(one.min_p, 0.0);
  EXPECT_EQ(*one.max_new_tokens, 64);
  EXPECT_DOUBLE_EQ(one.repetition_penalty, 1.1);
  const SamplingParams sp = SamplingParams::from(q, 5);
  EXPECT_TRUE(sp.do_sample);
  EXPECT_EQ(sp.top_k, 20);
  EXPECT_FLOAT_EQ(sp.top_p, 0.95f);
  EXPECT_EQ(sp.seed, 5u);
}

TEST(GenerationConfig, BadValuesNameTheKey) {
  for (const char* bad : {R"({"temperature": "hot"})", R"({"top_p": 0})", R"({"top_k": 1.5})",
                          R"({"eos_token_id": "x"})", R"({"eos_token_id": [1, "x"]})",
                          R"({"do_sample": 1})", R"({"repetition_penalty": 0})", R"([1])"}) {
    EXPECT_THROW(parse_generation_config(nlohmann::json::parse(bad)), Error) << bad;
  }
  try {
    parse_generation_config(nlohmann::json::parse(R"({"top_k": "x"})"));
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("top_k"), std::string::npos);
  }
  // A directory without the file gives the defaults.
  EXPECT_EQ(load_generation_config("/nonexistent-dir").top_k, 50);
}

}  // namespace
}  // namespace hogwild
