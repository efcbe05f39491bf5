// The engine-vs-naive-reference checker of tests/hogwild/test_session_reference.cpp, for any
// Backend (CpuBackend there, CudaBackend in tests/cuda/test_cuda_session.cpp): a SessionObserver
// that recomputes every forward's logits with NaiveSession (naive_reference.h) and checks every
// step promotion in the cache (read_block). Tolerances are the caller's.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cpu/rope.h"
#include "kv/backend.h"
#include "tests/hogwild/naive_reference.h"
#include "tests/hogwild/test_support.h"

namespace hogwild::testing {

/// max |ref - got| / max |ref| over one logits row (relative to the row's scale); infinity when
/// got holds a NaN or infinity.
inline double rel_err(const std::vector<double>& ref, const float* got) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    diff = std::max(diff, std::abs(ref[i] - got[i]));
    scale = std::max(scale, std::abs(ref[i]));
  }
  return diff / scale;
}

/// Checks promotions: a closing step's K/V read before the forward's promotion must reappear in
/// the history block at its offset, values bit-identical and keys rotated by that offset
/// (worst_key = max |want - got| / max |want| over a promoted block's keys, per layer).
class PromotionCheck {
 public:
  explicit PromotionCheck(Backend& be) : be_(be), rope_(cpu::compute_rope_params(be.config())) {}

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
  Backend& be_;
  cpu::RopeParams rope_;
  BlockId history_ = -1;
  std::vector<Pending> pending_;
};

/// Session observer that recomputes every forward with the naive reference (NaiveSession over
/// `weights`, the weights the backend holds) and records the worst logits error (rel_err), the
/// promotions (PromotionCheck) and how much of the semantics the run exercised.
class Checker : public SessionObserver {
 public:
  Checker(const ModelWeights& weights, Backend& be, const Formatting& f, Layout layout, int n,
          std::vector<int32_t> prompt)
      : ref_(weights, layout, n),
        promo_(be),
        f_(f),
        layout_(layout),
        n_(n),
        prompt_(std::move(prompt)) {}

  void on_forward(const ForwardRecord& r) override {
    const int64_t vocab = kToyVocab;
    promo_.after();
    if (r.serial_step == 0) {
      // Chunked prefill: only the last chunk has the prompt's logits row (when on the host).
      if (r.logit_workers.empty() || !r.logits) return;
      ++prefill_checked;
      std::vector<std::vector<int32_t>> others, own;
      if (n_ > 1 && layout_ != Layout::interleaved && layout_ != Layout::independent)
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
    if (r.history_scores) {  // the KV budget's measure against the reference's softmax weights
      const std::vector<double>& want = ref_.history_scores();
      ASSERT_EQ(r.history_scores->size(), want.size());
      for (size_t j = 0; j < want.size(); ++j)
        worst_score = std::max(worst_score, std::abs(want[j] - (*r.history_scores)[j]));
      ++scored_forwards;
    }
    // Every writer has a row, except a Skeleton-of-Thought expansion whose last token is fed as
    // it joins the history (no logits).
    ASSERT_LE(r.logit_workers.size(), out.size());
    for (size_t i = 0; i < r.logit_workers.size(); ++i) {
      ASSERT_EQ(out.count(r.logit_workers[i]), 1u);
      worst = std::max(worst, rel_err(out.at(r.logit_workers[i]), r.logits->data() + i * vocab));
    }
    rows_without_logits += static_cast<int>(out.size() - r.logit_workers.size());
    closed_steps += static_cast<int>(r.closed.size());
    promo_.before(r);
    ++forwards;
  }
  // Tokens are reported after the forward's promotions: check them now (a session run by an
  // engine frees its blocks as soon as it finishes, before finish() is called).
  void on_token(const TokenEvent&) override { promo_.after(); }
  void on_step_start(int, int, const std::string&, bool collab) override {
    collab_checks += collab;
  }
  void finish() { promo_.after(); }
  // The KV budget's forgetting: the reference forgets the same history tokens.
  void on_forget(const ForgetEvent& e) override {
    promo_.after();
    for (const auto& [b, end] : e.ranges) {
      ref_.forget(b, end);
      forgotten += end - b;
    }
  }

  double worst = 0;
  double worst_score = 0;  // max |reference weight - Backend::attention_scores| over the history
  int scored_forwards = 0;
  int64_t forgotten = 0;
  int forwards = 0, closed_steps = 0, multi_token_inputs = 0, collab_checks = 0;
  int prefill_checked = 0;
  int rows_without_logits = 0;  // writers fed without a logits row (Skeleton-of-Thought)
  PromotionCheck& promotion() { return promo_; }

 private:
  NaiveSession ref_;
  PromotionCheck promo_;
  const Formatting& f_;
  Layout layout_;
  int n_;
  std::vector<int32_t> prompt_;
  ByteCodec codec_;
};

/// What one checked run measured (run_checked).
struct CheckedRun {
  SessionResult res;
  double worst = 0, worst_key = 0;  // logits and promoted-keys relative error
  int forwards = 0, closed = 0, promoted_checked = 0, multi = 0, collab = 0;
  double worst_score = 0;  // attention scores against the reference (KV budget)
  int scored = 0;          // forwards whose scores were checked
  int64_t forgotten = 0;   // history tokens forgotten (as the reference was told)
};

/// The session the engine tests run: n scripted workers (worker_script), the test formatting with
/// collaboration checks every 7 tokens, a 30-step budget, checked forward by forward against the
/// naive reference built from `w` (the weights `be` holds).
inline CheckedRun run_checked(Backend& be, const ModelWeights& w, Layout layout, int n,
                              const ForgetPolicy& kv = {}) {
  ByteCodec codec;
  Formatting f = test_formatting(7);
  std::vector<std::vector<int32_t>> scripts;
  for (int k = 0; k < n; ++k) scripts.push_back(worker_script(k));
  ScriptPicker picker(scripts);
  SessionOptions opt;
  opt.n_workers = n;
  opt.layout = layout;
  opt.budget = 30;
  opt.kv = kv;
  Session s(be, codec, f, opt, picker);
  std::vector<int32_t> prompt = codec.encode("Task: add 2 and 3, then double it.\n\n");
  Checker check(w, be, f, layout, n, prompt);
  s.set_observer(&check);
  CheckedRun o;
  o.res = s.run(prompt);
  check.finish();
  o.worst = check.worst, o.worst_key = check.promotion().worst_key;
  o.forwards = check.forwards, o.closed = check.closed_steps;
  o.promoted_checked = check.promotion().checked;
  o.multi = check.multi_token_inputs, o.collab = check.collab_checks;
  o.worst_score = check.worst_score, o.scored = check.scored_forwards;
  o.forgotten = check.forgotten;
  return o;
}

/// The assertions every engine test makes on a run_checked result: the budget was reached, the
/// logits (and the promoted keys, except in the contiguous and independent layouts, which never
/// promote) are
/// within the given tolerances, and the run exercised multi-token inputs and collaboration checks.
inline void expect_matches_reference(const CheckedRun& o, Layout layout, double logits_tol,
                                     double key_tol) {
  EXPECT_EQ(o.res.serial_steps, 30);
  EXPECT_EQ(o.res.stop_reason, StopReason::budget);
  EXPECT_EQ(o.forwards, 30);
  EXPECT_LE(o.worst, logits_tol);
  EXPECT_GT(o.multi, 0);
  EXPECT_GT(o.collab, 0);
  if (layout != Layout::contiguous && layout != Layout::independent) {
    EXPECT_GT(o.closed, 0);
    EXPECT_EQ(o.promoted_checked, o.closed);
    EXPECT_LE(o.worst_key, key_tol);
  } else {
    EXPECT_EQ(o.closed, 0);
  }
}

}  // namespace hogwild::testing
