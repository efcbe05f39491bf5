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
#include "tests/hogwild/session_checker.h"
#include "tests/hogwild/test_support.h"

namespace hogwild::testing {
namespace {

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
  Checker check(be.weights(), be, f, layout, n, prompt);
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
