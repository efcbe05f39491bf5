// The engine (Session on CpuBackend) against the naive reference of the semantics
// (naive_reference.h): logits of every worker at every forward, all layouts, 1..8 workers, every
// tiny architecture (GQA/MQA/MHA, bias, qk-norm, partial rotary, yarn, llama3 RoPE), through step
// promotions, collaboration checks and multi-token inputs. Also checks every promotion in the
// cache itself: values unchanged, keys = originals rotated by the new offset (read_block).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "cpu/cpu_backend.h"
#include "cpu/rope.h"
#include "tests/hogwild/naive_reference.h"
#include "tests/hogwild/test_support.h"

namespace hogwild::testing {
namespace {

double rel_err(const std::vector<double>& ref, const float* got) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    diff = std::max(diff, std::abs(ref[i] - got[i]));
    scale = std::max(scale, std::abs(ref[i]));
  }
  return diff / scale;
}

// Checks promotions: a closing step's K/V read before the forward's promotion must reappear in
// the history block at its offset, values unchanged and keys rotated by that offset.
class PromotionCheck {
 public:
  explicit PromotionCheck(cpu::CpuBackend& be) : be_(be), rope_(be.rope()) {}

  void before(const ForwardRecord& r) {
    if (r.closed.empty()) return;
    history_ = r.views[0][0];
    int64_t offset = be_.block_len(history_);
    for (auto [w, k] : r.closed) {
      auto it = std::find_if(r.tokens.begin(), r.tokens.end(),
                             [&](const FedToken& t) { return t.worker == w && t.step == k; });
      ASSERT_NE(it, r.tokens.end());
      Pending p{offset, be_.block_len(it->block), {}, {}};
      for (int64_t l = 0; l < be_.config().num_hidden_layers; ++l) {
        p.k.emplace_back();
        p.v.emplace_back();
        be_.read_block(it->block, l, p.k.back(), p.v.back());
      }
      offset += p.len;
      pending_.push_back(std::move(p));
    }
  }

  void after() {
    const auto& c = be_.config();
    const int64_t hd = c.head_dim, kvd = c.num_key_value_heads * hd, half = rope_.rotary_dim / 2;
    for (auto& p : pending_) {
      for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
        std::vector<float> k, v;
        be_.read_block(history_, l, k, v);
        ASSERT_GE(static_cast<int64_t>(k.size()), (p.offset + p.len) * kvd);
        double diff = 0, scale = 0;
        for (int64_t j = 0; j < p.len; ++j)
          for (int64_t h = 0; h < c.num_key_value_heads; ++h) {
            const float* orig = p.k[l].data() + j * kvd + h * hd;
            const float* got = k.data() + (p.offset + j) * kvd + h * hd;
            for (int64_t d = 0; d < hd; ++d) {
              double want = orig[d];
              if (d < rope_.rotary_dim) {
                int64_t i = d % half;
                double a = static_cast<double>(p.offset) * rope_.inv_freq[i];
                double x = orig[i], y = orig[i + half];
                want = d < half ? x * std::cos(a) - y * std::sin(a)
                                : y * std::cos(a) + x * std::sin(a);
              }
              diff = std::max(diff, std::abs(want - got[d]));
              scale = std::max(scale, std::abs(want));
            }
            for (int64_t d = 0; d < hd; ++d)
              ASSERT_EQ(v[(p.offset + j) * kvd + h * hd + d], p.v[l][j * kvd + h * hd + d]);
          }
        worst_key = std::max(worst_key, diff / scale);
      }
      ++checked;
    }
    pending_.clear();
  }

  double worst_key = 0;
  int checked = 0;

 private:
  struct Pending {
    int64_t offset, len;
    std::vector<std::vector<float>> k, v;
  };
  cpu::CpuBackend& be_;
  const cpu::RopeParams& rope_;
  BlockId history_ = -1;
  std::vector<Pending> pending_;
};

class Checker : public SessionObserver {
 public:
  Checker(cpu::CpuBackend& be, const Formatting& f, Layout layout, int n,
          std::vector<int32_t> prompt)
      : ref_(be.weights(), layout, n),
        promo_(be),
        f_(f),
        layout_(layout),
        n_(n),
        prompt_(std::move(prompt)) {}

  void on_forward(const ForwardRecord& r) override {
    const int64_t vocab = kToyVocab;
    promo_.after();
    if (r.serial_step == 0) {
      std::vector<std::vector<int32_t>> others, own;
      if (n_ > 1 && layout_ != Layout::interleaved)
        for (int w = 0; w < n_; ++w) {
          others.push_back(codec_.encode(f_.others_header(w)));
          own.push_back(codec_.encode(f_.layout.other_separator + f_.own_header(w)));
        }
      auto lg = ref_.prefill(prompt_, others, codec_.encode(f_.layout.other_separator), own);
      worst = std::max(worst, rel_err(lg, r.logits->data()));
      return;
    }
    std::vector<RefFed> fed;
    std::vector<int> count(n_, 0);
    for (auto& t : r.tokens) {
      fed.push_back({t.worker, t.step, t.token});
      ++count[t.worker];
    }
    for (int c : count) multi_token_inputs += c > 1;
    auto out = ref_.forward(fed, r.closed);
    ASSERT_EQ(out.size(), r.logit_workers.size());
    for (size_t i = 0; i < r.logit_workers.size(); ++i)
      worst = std::max(worst, rel_err(out.at(r.logit_workers[i]), r.logits->data() + i * vocab));
    closed_steps += static_cast<int>(r.closed.size());
    promo_.before(r);
    ++forwards;
  }
  void on_step_start(int, int, const std::string&, bool collab) override {
    collab_checks += collab;
  }
  void finish() { promo_.after(); }

  double worst = 0;
  int forwards = 0, closed_steps = 0, multi_token_inputs = 0, collab_checks = 0;
  PromotionCheck& promotion() { return promo_; }

 private:
  NaiveHogwild ref_;
  PromotionCheck promo_;
  const Formatting& f_;
  Layout layout_;
  int n_;
  std::vector<int32_t> prompt_;
  ByteCodec codec_;
};

using Param = std::tuple<test::TinySpec, Layout, int>;

class EngineVsReference : public ::testing::TestWithParam<Param> {};

TEST_P(EngineVsReference, LogitsMatchThroughPromotions) {
  auto [spec, layout, n] = GetParam();
  cpu::CpuBackend be(session_model(spec));
  ByteCodec codec;
  Formatting f = test_formatting(7);
  std::vector<std::vector<int32_t>> scripts;
  for (int w = 0; w < n; ++w) scripts.push_back(worker_script(w));
  ScriptPicker picker(scripts);
  SessionOptions opt;
  opt.n_workers = n;
  opt.layout = layout;
  opt.budget = 30;
  Session s(be, codec, f, opt, picker);
  std::vector<int32_t> prompt = codec.encode("Task: add 2 and 3, then double it.\n\n");
  Checker check(be, f, layout, n, prompt);
  s.set_observer(&check);
  SessionResult res = s.run(prompt);
  check.finish();
  EXPECT_EQ(res.serial_steps, 30);
  EXPECT_EQ(res.stop_reason, "budget");
  EXPECT_EQ(check.forwards, 30);
  EXPECT_LE(check.worst, 1e-4);
  EXPECT_GT(check.multi_token_inputs, 0);
  EXPECT_GT(check.collab_checks, 0);
  if (layout != Layout::contiguous) {
    EXPECT_GT(check.closed_steps, 0);
    EXPECT_EQ(check.promotion().checked, check.closed_steps);
    EXPECT_LE(check.promotion().worst_key, 1e-4);
  } else {
    EXPECT_EQ(check.closed_steps, 0);
  }
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  auto& [spec, layout, n] = info.param;
  return spec.name + "_" + layout_name(layout) + "_w" + std::to_string(n);
}

INSTANTIATE_TEST_SUITE_P(AllArchs, EngineVsReference,
                         ::testing::Combine(::testing::ValuesIn(session_specs()),
                                            ::testing::Values(Layout::combined, Layout::interleaved,
                                                              Layout::contiguous),
                                            ::testing::Range(1, 9)),
                         param_name);

}  // namespace
}  // namespace hogwild::testing
