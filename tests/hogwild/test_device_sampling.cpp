// Session with device sampling (SessionOptions::device_sampling, ForwardBatch::draw,
// TokenPicker::device_row): a backend that samples "on the device" must give the very tokens of
// host sampling (same seeds, same RNG stream), get the session's forbidden ids as banned ids, and
// be bypassed when the picker needs host logits (repetition penalty).
//
// The device here is a host twin of CudaBackend::forward's draw (src/cuda/sampling.h semantics:
// banned ids -> temperature -> top-k -> top-p -> min-p -> inverse CDF in vocabulary order with
// the given uniform), built on the CPU backend and the CPU Sampler's processors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "cpu/cpu_backend.h"
#include "hogwild/picker.h"
#include "sampling/row_draw.h"
#include "tests/hogwild/test_support.h"

namespace hogwild::testing {
namespace {

class HostTwinDevice : public cpu::CpuBackend {
 public:
  using cpu::CpuBackend::CpuBackend;
  bool samples_on_device() const override { return true; }
  using cpu::CpuBackend::forward;
  void forward(const ForwardBatch& batch, ForwardResult& out) override {
    if (batch.draw.rows.empty()) return cpu::CpuBackend::forward(batch, out);
    const ForwardDraw& d = batch.draw;
    ForwardBatch plain = batch;
    plain.draw = {};
    std::vector<float> logits;
    forward(plain, logits);
    ++calls;
    last_banned = d.banned_sets.empty() ? std::vector<int32_t>{} : d.banned_sets[0];
    const int64_t V = config().vocab_size;
    ASSERT_EQ(static_cast<int64_t>(d.rows.size()) * V, static_cast<int64_t>(logits.size()));
    out.tokens.clear();
    for (size_t r = 0; r < d.rows.size(); ++r) {
      std::span<const int32_t> banned;
      if (d.rows[r].banned >= 0) banned = d.banned_sets.at(d.rows[r].banned);
      out.tokens.push_back(
          draw_row(std::span<const float>(logits.data() + r * V, V), d.rows[r], banned));
    }
    out.logits = d.keep_logits ? logits : std::vector<float>{};
  }
  int calls = 0;
  std::vector<int32_t> last_banned;
};

struct SessionRun {
  std::vector<std::vector<int32_t>> ids;  // per worker, sampled tokens in order
  SessionResult res;
  int null_logit_forwards = 0;  // decode forwards whose logits stayed on the device
};

struct Collect : SessionObserver {
  SessionRun* run;
  void on_token(const TokenEvent& e) override { run->ids[e.worker].push_back(e.token); }
  void on_forward(const ForwardRecord& r) override {
    if (r.serial_step > 0) run->null_logit_forwards += !r.logits;  // decode forwards only
  }
};

SessionRun run_session(cpu::CpuBackend& be, const SamplingParams& sp, bool device, int n_workers,
                       Layout layout = Layout::combined, bool keep_logits = false) {
  ByteCodec codec;
  Formatting f = test_formatting();
  f.forbidden.texts = {"#", "<t270>"};
  SessionOptions opt;
  opt.n_workers = n_workers;
  opt.layout = layout;
  opt.budget = 40;
  opt.stop_on_answer = false;
  opt.device_sampling = device;
  opt.keep_logits = keep_logits;
  SamplerPicker picker(sp, n_workers, ByteCodec().encode("Q: 6 x 7?\n"));
  Session s(be, codec, f, opt, picker);
  SessionRun out;
  out.ids.resize(n_workers);
  Collect c;
  c.run = &out;
  s.set_observer(&c);
  out.res = s.run(ByteCodec().encode("Q: 6 x 7?\n"));
  return out;
}

SamplingParams sampled(float temperature, int64_t top_k, float top_p, float min_p) {
  SamplingParams sp;
  sp.do_sample = true;
  sp.temperature = temperature;
  sp.top_k = top_k;
  sp.top_p = top_p;
  sp.min_p = min_p;
  sp.seed = 99;
  return sp;
}

TEST(DeviceSampling, SameTokensAsHostSampling) {
  const test::TinySpec spec = session_specs()[2];
  for (const SamplingParams& sp : {SamplingParams{}, sampled(2.0f, 0, 1.0f, 0.0f),
                                   sampled(2.0f, 20, 0.9f, 0.0f), sampled(2.0f, 0, 1.0f, 0.02f)}) {
    for (int n : {1, 3}) {
      for (Layout layout : {Layout::combined, Layout::interleaved, Layout::contiguous}) {
        SCOPED_TRACE(std::string("layout ") + layout_name(layout));
        cpu::CpuBackend host(session_model(spec));
        const SessionRun a = run_session(host, sp, false, n, layout);
        HostTwinDevice dev(session_model(spec));
        const SessionRun b = run_session(dev, sp, true, n, layout);
        EXPECT_EQ(a.ids, b.ids) << "workers " << n << " temperature " << sp.temperature;
        EXPECT_EQ(a.res.serial_steps, 40);
        // Every decode forward sampled on the device; so did the prefill (its row unused) and
        // the finisher's greedy forwards (at least one).
        EXPECT_EQ(b.null_logit_forwards, 40);
        EXPECT_GE(dev.calls, 40 + 1 + 1);
        EXPECT_EQ(a.null_logit_forwards, 0);
        // The banned ids are the session's forbidden tokens: EOS, '#', <t270> (and nothing else).
        EXPECT_EQ(dev.last_banned, (std::vector<int32_t>{'#', kEos, 270}));
        // The sampled tokens are varied (not all one id) when sampling.
        if (sp.do_sample) {
          std::set<int32_t> distinct(b.ids[0].begin(), b.ids[0].end());
          EXPECT_GT(distinct.size(), 3u);
        }
      }
    }
  }
}

// Keeping the logits for a dump (run --dump-logits) brings every decode forward's rows to the host
// (ForwardDraw::keep_logits) without changing a single draw.
TEST(DeviceSampling, KeptLogitsDoNotChangeTheDraws) {
  const test::TinySpec spec = session_specs()[2];
  const SamplingParams sp = sampled(2.0f, 20, 0.9f, 0.0f);
  cpu::CpuBackend host(session_model(spec));
  const SessionRun a = run_session(host, sp, false, 3);
  HostTwinDevice dev(session_model(spec));
  const SessionRun b = run_session(dev, sp, true, 3, Layout::combined, /*keep_logits=*/true);
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_EQ(b.null_logit_forwards, 0);
}

TEST(DeviceSampling, RepetitionPenaltyStaysOnTheHost) {
  const test::TinySpec spec = session_specs()[2];
  SamplingParams sp = sampled(1.0f, 0, 1.0f, 0.0f);
  sp.repetition_penalty = 1.3f;
  cpu::CpuBackend host(session_model(spec));
  const SessionRun a = run_session(host, sp, false, 2);
  HostTwinDevice dev(session_model(spec));
  const SessionRun b = run_session(dev, sp, true, 2);
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_EQ(b.null_logit_forwards, 0);  // every decode forward brought its logits to the host
}

TEST(DeviceSampling, PickerDrawsTheSamplersUniforms) {
  // device_row's uniform is the worker's own RNG stream: seed + worker, as Sampler::sample draws.
  SamplingParams sp = sampled(0.7f, 5, 0.8f, 0.1f);
  SamplerPicker picker(sp, 2, {1, 2});
  for (int w : {0, 1}) {
    Rng rng(sp.seed + w);
    for (int i = 0; i < 5; ++i) {
      RowSampling r;
      ASSERT_TRUE(picker.device_row(w, r));
      EXPECT_EQ(r.u, static_cast<float>(rng.uniform()));
      EXPECT_FLOAT_EQ(r.temperature, 0.7f);
      EXPECT_EQ(r.top_k, 5);
      EXPECT_FLOAT_EQ(r.top_p, 0.8f);
      EXPECT_FLOAT_EQ(r.min_p, 0.1f);
    }
  }
  SamplerPicker greedy(SamplingParams{}, 1, {1});
  RowSampling r;
  r.temperature = 5;
  ASSERT_TRUE(greedy.device_row(0, r));
  EXPECT_EQ(r.temperature, 0.0f);  // greedy: argmax, no draw
}

}  // namespace
}  // namespace hogwild::testing
