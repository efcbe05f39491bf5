// The engine (Session on CpuBackend) against the naive reference of the semantics
// (naive_reference.h): logits of every worker at every forward, all layouts, 1..8 workers, every
// tiny architecture (GQA/MQA/MHA, bias, qk-norm, partial rotary, yarn, llama3 RoPE, Qwen3-MoE
// with and without renormalisation and a dense layer), through step
// promotions, collaboration checks and multi-token inputs (independent: each worker's own
// collaboration checks, no other worker in its view). Also checks every promotion in the
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
  expect_matches_reference(run_checked(be, be.weights(), layout, n), layout, 1e-4, 1e-4);
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  auto& [spec, layout, n] = info.param;
  return spec.name + "_" + layout_name(layout) + "_w" + std::to_string(n);
}

INSTANTIATE_TEST_SUITE_P(AllArchs, EngineVsReference,
                         ::testing::Combine(::testing::ValuesIn(session_specs()),
                                            ::testing::Values(Layout::combined, Layout::interleaved,
                                                              Layout::contiguous,
                                                              Layout::independent),
                                            ::testing::Range(1, 9)),
                         param_name);
// Qwen3-MoE (the CPU backend's sparse block): the same semantics with experts grouped per forward.
INSTANTIATE_TEST_SUITE_P(Moe, EngineVsReference,
                         ::testing::Combine(::testing::ValuesIn(moe_session_specs()),
                                            ::testing::Values(Layout::combined, Layout::interleaved,
                                                              Layout::contiguous,
                                                              Layout::independent),
                                            ::testing::Range(1, 9)),
                         param_name);

}  // namespace
}  // namespace hogwild::testing
