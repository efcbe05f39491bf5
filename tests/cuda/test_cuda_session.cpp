// The hogwild invariants on the GPU: a Session on CudaBackend against the naive double-precision
// reference of the semantics (tests/hogwild/naive_reference.h), as tests/hogwild/
// test_session_reference.cpp does for the CPU: logits of every worker at every forward, every
// step promotion in the cache (values bit-identical, keys = originals rotated by the new offset),
// over architectures x layouts x worker counts, through collaboration checks and multi-token
// inputs. The reference gets the same bf16-rounded weights the GPU holds, so the difference is
// the GPU's bf16 activations and K/V cache.
// A deliberately broken backend (workers blind to each other's current steps) must fail the
// check, so the bf16 tolerance still separates right from wrong semantics.
// The KV budget (docs/ARCHITECTURE.md "Bounded shared memory") as tests/hogwild/test_kv_budget.cpp
// checks it on the CPU: sessions that forget match the reference told to forget the same tokens,
// and the same forgetting, promotions and scored forwards on both backends give the same logits
// and attention scores; R-KV's key redundancy matches the CPU backend's.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <tuple>

#include "cpu/cpu_backend.h"
#include "cuda/cuda_backend.h"
#include "hogwild/forgetting.h"
#include "sampling/row_draw.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/hogwild/block_ops_script.h"
#include "tests/hogwild/engine_checker.h"
#include "tests/hogwild/forwarding_backend.h"
#include "tests/hogwild/prefix_cache_run.h"
#include "tests/hogwild/session_checker.h"
#include "tests/hogwild/test_support.h"

namespace hogwild::testing {
namespace {

// Logits: max |ref - got| / max |ref| per row. The same bound as the CUDA-vs-CPU backend test
// (tests/cuda/test_cuda_backend.cpp, 2e-2): bf16 rounding (unit roundoff u = 2^-8) of every
// projection input and of the cached K/V, fp32 accumulation and residual stream; measured
// 1.4e-3 .. 1.6e-2 on the H200 (2026-11-29).
constexpr double kLogitsTol = 2e-2;
// Promoted keys (max |want - got| / max |want| per layer): the GPU rotates the stored bf16 key in
// fp32 and rounds the result to bf16 once (round to nearest: <= u = 2^-8 of the value), with
// cos/sin of float32 angles (offset * inv_freq in float32 as HF; < 1e-4 of the value at these
// offsets, < 2048) where the reference rotates in double. Bound: u + 1e-4; measured <= 3.81e-3.
constexpr double kKeyTol = 0x1p-8 + 1e-4;

// Attention scores (Backend::attention_scores: softmax weights in [0, 1]), max |ref - got| over
// a block's keys. A weight is 2^(s - lse) with s = q.k scale (log2 units): the GPU's s carries
// the bf16 error of the pipeline (kLogitsTol relative, as the logits), which moves a weight by that
// much of itself (weights <= 1).
constexpr double kScoreTol = kLogitsTol;

// Every tiny flag set of the session test with the head_dim the CUDA kernel supports (128 for the
// GQA-3 qk-norm and the partial-rotary MQA model, 64 elsewhere) and CUDA-test widths.
ModelWeights cuda_session_model(const test::TinySpec& spec) {
  ModelConfig c = test::tiny_config(spec);
  c.head_dim = (spec.name == "qwen3_qknorm_tied" || spec.name == "phi3_partial_mqa") ? 128 : 64;
  c.hidden_size = 96;
  c.intermediate_size = 136;
  c.vocab_size = kToyVocab;
  c.max_position_embeddings = 8192;
  ModelWeights w = test::tiny_weights(c, 7);
  test::round_weights_bf16(w);
  return w;
}

cuda::CudaOptions options() {
  cuda::CudaOptions o;
  o.max_batch_tokens = 1024, o.max_kv_tokens = 16384;
  return o;
}

using Param = std::tuple<test::TinySpec, Layout, int>;
using Ranges = std::vector<std::pair<int64_t, int64_t>>;

class CudaSessionVsReference : public ::testing::TestWithParam<Param> {};

TEST_P(CudaSessionVsReference, LogitsAndPromotionsMatchWithinBf16) {
  HOGWILD_REQUIRE_GPU();
  auto [spec, layout, n] = GetParam();
  const ModelWeights w = cuda_session_model(spec);
  cuda::CudaBackend be(w, options());
  const CheckedRun o = run_checked(be, w, layout, n);
  expect_matches_reference(o, layout, kLogitsTol, kKeyTol);
  std::printf(
      "[ %s %s w%d ] logits rel %.3g (tol %.2g), promoted keys rel %.3g (tol %.2g), %d "
      "promotions\n",
      spec.name.c_str(), layout_name(layout), n, o.worst, kLogitsTol, o.worst_key, kKeyTol,
      o.promoted_checked);
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  auto& [spec, layout, n] = info.param;
  return spec.name + "_" + layout_name(layout) + "_w" + std::to_string(n);
}

INSTANTIATE_TEST_SUITE_P(Archs, CudaSessionVsReference,
                         ::testing::Combine(::testing::ValuesIn(session_specs()),
                                            ::testing::Values(Layout::combined, Layout::interleaved,
                                                              Layout::contiguous),
                                            ::testing::Values(1, 3, 8)),
                         param_name);

// A backend bug the check must catch at bf16 tolerance: every forward hides the blocks other
// workers are writing in this forward (their current steps) from each worker's view, i.e. the
// workers stop seeing each other's unfinished thoughts, which is the point of Hogwild!.
class BlindToOthers : public test::ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void logits_of(const ForwardBatch& batch, std::vector<float>& logits) override {
    ForwardBatch b = batch;
    for (size_t w = 0; w < b.views.size(); ++w) {
      std::set<BlockId> others;
      for (const TokenInput& t : batch.tokens)
        if (t.worker != static_cast<int32_t>(w)) others.insert(t.block);
      for (const TokenInput& t : batch.tokens)
        if (t.worker == static_cast<int32_t>(w)) others.erase(t.block);
      std::erase_if(b.views[w], [&](BlockId x) { return others.count(x) > 0; });
    }
    inner_.forward(b, logits);
  }
};

// Several sessions (mixed layouts and worker counts, chunked prefill, joining, leaving, cancelled)
// in every forward of the CUDA backend: each matches the naive reference of that session alone,
// at bf16 tolerance.
TEST(CudaEngineVsReference, SessionsSharingForwardsMatchTheirReferenceAlone) {
  HOGWILD_REQUIRE_GPU();
  for (int spec_index : {1, 2}) {
    const test::TinySpec spec = session_specs().at(spec_index);
    SCOPED_TRACE(spec.name);
    const ModelWeights w = cuda_session_model(spec);
    cuda::CudaOptions o = options();
    o.max_kv_tokens = kSharingPoolTokens;
    cuda::CudaBackend gpu(w, o);
    expect_sessions_match_reference(gpu, w, kLogitsTol, kKeyTol);
  }
}

// The same block operations and forwards on both backends: the same ids, lengths and refusals
// (one block table, one plan), logits and promoted keys within bf16 tolerance.
TEST(CudaBlockOps, SameAnswersAsTheCpuBackend) {
  HOGWILD_REQUIRE_GPU();
  const ModelWeights w = cuda_session_model(session_specs().at(2));
  cpu::CpuBackend cpu_be(w);
  cuda::CudaBackend gpu(w, options());
  const BlockOpsRecord want = run_block_ops(cpu_be), got = run_block_ops(gpu);
  EXPECT_EQ(got.ids, want.ids);
  EXPECT_EQ(got.lens, want.lens);
  EXPECT_EQ(got.errors, want.errors);
  EXPECT_EQ(got.live_end, 0);
  ASSERT_EQ(got.logits.size(), want.logits.size());
  for (size_t f = 0; f < want.logits.size(); ++f) {
    ASSERT_EQ(got.logits[f].size(), want.logits[f].size());
    const size_t V = kToyVocab;
    for (size_t r = 0; r < want.logits[f].size() / V; ++r) {
      std::vector<double> ref(want.logits[f].begin() + r * V, want.logits[f].begin() + (r + 1) * V);
      EXPECT_LE(rel_err(ref, got.logits[f].data() + r * V), kLogitsTol) << "forward " << f;
    }
  }
  // The history's keys after the promotion went through a whole bf16 layer on the GPU (embedding,
  // norm, k_proj, k-norm, RoPE): they agree with the fp32 CPU's within the pipeline's bf16
  // tolerance (kLogitsTol), not the promotion's own (kKeyTol, a rotation of bf16 keys in place,
  // which the session tests check on each backend).
  std::vector<double> k(want.promoted_k.begin(), want.promoted_k.end());
  ASSERT_EQ(got.promoted_k.size(), want.promoted_k.size());
  const double key_err = rel_err(k, got.promoted_k.data());
  EXPECT_LE(key_err, kLogitsTol);
  std::printf("[ block ops ] promoted keys rel %.3g (tol %.2g)\n", key_err, kLogitsTol);
}

// Prefix sharing on the GPU, where a shared page is read in place from the KV pool: sessions
// that begin with the same prompt, one after the other on one engine, give the same tokens and
// logits as without the cache, bit for bit (each forward has the same rows in both runs: the
// prefill chunks of 32 tokens fall on the same boundaries, and a shared page holds the bits its
// first session wrote), and share 128 / 64 tokens as on the CPU.
TEST(CudaPrefixCache, SessionsOneAfterAnotherGiveTheSameRunWithAndWithoutTheCache) {
  HOGWILD_REQUIRE_GPU();
  const ModelWeights w = cuda_session_model(session_specs().at(2));
  auto gpu = [&]() -> std::unique_ptr<Backend> {
    return std::make_unique<cuda::CudaBackend>(w, options());
  };
  using namespace prefix_run;
  const prefix_run::Planned first{2, "test", kPrompt};
  const std::vector<prefix_run::Planned> then = {
      {2, "test", kPrompt}, {1, "plain", kPrompt}, {2, "test", kOther}};
  expect_same_runs(run_engine(gpu, true, false, first, then),
                   run_engine(gpu, false, false, first, then), {0, 128, 128, 64});
}

class CudaKvBudgetVsReference : public ::testing::TestWithParam<Param> {};

// test_kv_budget.cpp's KvBudgetVsReference on the GPU: chunks of 2 tokens (gaps inside the
// attention's 64-key tiles), the last 8 kept, a 4-step window. Every forward's logits match the
// naive reference that forgets the same history tokens, the measured scores its softmax weights.
TEST_P(CudaKvBudgetVsReference, ReplayHoldsOnTheViewsThatRemain) {
  HOGWILD_REQUIRE_GPU();
  auto [spec, layout, n] = GetParam();
  const ModelWeights w = cuda_session_model(spec);
  cuda::CudaBackend be(w, options());
  ASSERT_TRUE(be.can_forget());
  const int64_t prompt =
      static_cast<int64_t>(ByteCodec().encode("Task: add 2 and 3, then double it.\n\n").size());
  const ForgetPolicy kv{.budget = prompt + 8 + 4, .chunk = 2, .recent = 8, .window = 4};
  const CheckedRun o = run_checked(be, w, layout, n, kv);
  expect_matches_reference(o, layout, kLogitsTol, kKeyTol);
  EXPECT_GT(o.forgotten, 0);
  EXPECT_EQ(o.forgotten, o.res.forgotten_tokens);
  EXPECT_EQ(o.scored, 30);
  EXPECT_LE(o.worst_score, kScoreTol);
  std::printf(
      "[ %s %s w%d kv budget ] logits rel %.3g, scores abs %.3g (tol %.2g), %lld forgotten\n",
      spec.name.c_str(), layout_name(layout), n, o.worst, o.worst_score, kScoreTol,
      static_cast<long long>(o.forgotten));
}

INSTANTIATE_TEST_SUITE_P(Archs, CudaKvBudgetVsReference,
                         ::testing::Combine(::testing::ValuesIn(session_specs()),
                                            ::testing::Values(Layout::combined,
                                                              Layout::interleaved),
                                            ::testing::Values(1, 2, 4)),
                         param_name);

// The same forwards and block operations on both backends, with score_blocks in every forward:
// logits (per row, relative to its scale) and attention scores agree.
struct BothBackends {
  Backend& gpu;
  Backend& cpu;
  double worst_logits = 0, worst_score = 0;
  int64_t zero_checked = 0;  // forgotten keys whose GPU score was checked to be 0

  BlockId new_block() {
    const BlockId b = gpu.new_block();
    EXPECT_EQ(cpu.new_block(), b);
    return b;
  }
  void forget(BlockId b, int64_t begin, int64_t end) {
    gpu.forget_tokens(b, begin, end);
    cpu.forget_tokens(b, begin, end);
  }
  // gaps: per score block, its forgotten ranges (whose GPU scores must be exactly 0).
  void forward(const ForwardBatch& batch, const std::vector<Ranges>& gaps) {
    std::vector<float> lg, lc;
    gpu.forward(batch, lg);
    cpu.forward(batch, lc);
    ASSERT_EQ(lg.size(), lc.size());
    const size_t V = gpu.config().vocab_size;
    for (size_t r = 0; r < lc.size() / V; ++r) {
      const std::vector<double> ref(lc.begin() + r * V, lc.begin() + (r + 1) * V);
      worst_logits = std::max(worst_logits, rel_err(ref, lg.data() + r * V));
    }
    const auto& sg = gpu.attention_scores();
    const auto& sc = cpu.attention_scores();
    ASSERT_EQ(sg.size(), batch.score_blocks.size());
    ASSERT_EQ(sc.size(), sg.size());
    for (size_t i = 0; i < sg.size(); ++i) {
      ASSERT_EQ(sg[i].size(), static_cast<size_t>(gpu.block_len(batch.score_blocks[i])));
      ASSERT_EQ(sc[i].size(), sg[i].size());
      for (size_t j = 0; j < sg[i].size(); ++j)
        worst_score = std::max(worst_score, std::abs(double(sg[i][j]) - sc[i][j]));
      for (const auto& [b, e] : gaps[i])
        for (int64_t j = b; j < e; ++j, ++zero_checked) EXPECT_EQ(sg[i][j], 0.0f) << i << " " << j;
    }
  }
};

// A prompt of 150 tokens (several attention tiles, the append kernel before the attention), gaps
// inside and across tiles, then 3 workers' decode steps (the fused append, graphs or not) with a
// forgotten range in a step that is promoted into the history (append_block carries it), and
// scores of the history, of a step, of a block named twice and of a block no view holds.
class CudaKvBudgetVsCpu : public ::testing::TestWithParam<test::TinySpec> {};

TEST_P(CudaKvBudgetVsCpu, ForgettingAndScoresMatchTheCpuBackend) {
  HOGWILD_REQUIRE_GPU();
  const test::TinySpec spec = GetParam();
  const ModelWeights w = cuda_session_model(spec);
  for (bool graphs : {true, false}) {
    SCOPED_TRACE(graphs ? "graphs" : "no graphs");
    cpu::CpuBackend cpu_be(w);
    cuda::CudaOptions o = options();
    o.use_graphs = graphs;
    cuda::CudaBackend gpu(w, o);
    BothBackends be{gpu, cpu_be};
    test::TestRng rng(5);
    auto tok = [&] { return static_cast<int32_t>(rng.next() % kToyVocab); };
    const BlockId H = be.new_block(), spare = be.new_block();
    Ranges h_gaps;
    {
      ForwardBatch b;
      b.views = {{H}};
      for (int i = 0; i < 150; ++i) b.tokens.push_back({tok(), 0, H, i == 149});
      b.score_blocks = {H};
      ASSERT_NO_FATAL_FAILURE(be.forward(b, {{}}));
    }
    for (auto [b, e] : {std::pair<int64_t, int64_t>{5, 9}, {40, 41}, {60, 70}, {100, 128}}) {
      be.forget(H, b, e);
      h_gaps.emplace_back(b, e);
    }
    constexpr int W = 3;
    std::vector<BlockId> S(W);
    for (int k = 0; k < W; ++k) S[k] = be.new_block();
    for (int step = 0; step < 10; ++step) {
      ForwardBatch b;
      b.views.resize(W);
      for (int k = 0; k < W; ++k) {
        b.views[k] = {H};
        for (int q = 0; q < W; ++q)
          if (q != k) b.views[k].push_back(S[q]);
        b.views[k].push_back(S[k]);
        const int m = (step == 0 && k == 1) ? 3 : 1;  // a multi-token input
        for (int i = 0; i < m; ++i) b.tokens.push_back({tok(), k, S[k], true});
      }
      b.score_blocks = {H};
      std::vector<Ranges> gaps = {h_gaps};
      if (step == 2) {  // a step, the history twice, a block no view holds
        b.score_blocks = {H, S[0], H, spare};
        gaps = {h_gaps, {}, h_gaps, {}};
      }
      ASSERT_NO_FATAL_FAILURE(be.forward(b, gaps));
      if (step == 4) be.forget(S[0], 1, 3);  // 5 tokens in S[0] by now
      if (step == 6) {  // S[0] promoted: its gap moves into the history at its offset
        const int64_t off = gpu.block_len(H);
        gpu.append_block(H, S[0]);
        cpu_be.append_block(H, S[0]);
        h_gaps.emplace_back(off + 1, off + 3);
        gpu.truncate_block(S[0], 0);
        cpu_be.truncate_block(S[0], 0);
      }
    }
    EXPECT_LE(be.worst_logits, kLogitsTol);
    EXPECT_LE(be.worst_score, kScoreTol);
    EXPECT_GT(be.zero_checked, 0);
    std::printf("[ %s %s ] logits rel %.3g (tol %.2g), scores abs %.3g (tol %.2g)\n",
                spec.name.c_str(), graphs ? "graphs" : "no graphs", be.worst_logits, kLogitsTol,
                be.worst_score, kScoreTol);
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, CudaKvBudgetVsCpu, ::testing::ValuesIn(session_specs()),
                         [](const auto& info) { return info.param.name; });

// R-KV's redundancy term (Backend::key_redundancy): the GPU's measure on its bf16 keys against the
// CPU's on fp32 keys of the same prefill, with gaps inside chunks, a wholly forgotten chunk (its
// page given back: a whole page forgotten) and a chunk nested in another. A redundancy is a mean of
// cosines of unit chunk keys; each key carries the pipeline's relative error (kLogitsTol), which
// moves a cosine of two unit vectors by at most about twice that.
constexpr double kRedundancyTol = 2 * kLogitsTol;

TEST_P(CudaKvBudgetVsCpu, KeyRedundancyMatchesTheCpuBackend) {
  HOGWILD_REQUIRE_GPU();
  const test::TinySpec spec = GetParam();
  const ModelWeights w = cuda_session_model(spec);
  cpu::CpuBackend cpu_be(w);
  cuda::CudaBackend gpu(w, options());
  ASSERT_TRUE(gpu.measures_redundancy());
  BothBackends be{gpu, cpu_be};
  test::TestRng rng(9);
  const BlockId H = be.new_block();
  ForwardBatch b;
  b.views = {{H}};
  for (int i = 0; i < 200; ++i)
    b.tokens.push_back({static_cast<int32_t>(rng.next() % kToyVocab), 0, H, i == 199});
  b.score_blocks = {H};
  ASSERT_NO_FATAL_FAILURE(be.forward(b, {{}}));
  be.forget(H, 5, 9);
  be.forget(H, 64, 128);  // a whole page: given back on the GPU
  Ranges chunks;
  for (int64_t c = 0; c + 16 <= 192; c += 16) chunks.emplace_back(c, c + 16);
  chunks.emplace_back(136, 144);
  const std::vector<float> got = gpu.key_redundancy(H, chunks);
  const std::vector<float> want = cpu_be.key_redundancy(H, chunks);
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(double(got[i]) - want[i]));
  EXPECT_LE(worst, kRedundancyTol);
  EXPECT_EQ(got[4], 0.0f);  // [64, 80): nothing kept
  EXPECT_THROW(gpu.key_redundancy(H, {{0, 16}, {192, 201}}), Error);
  std::printf("[ %s ] key redundancy abs %.3g (tol %.2g)\n", spec.name.c_str(), worst,
              kRedundancyTol);
}

TEST(CudaSessionBreakage, WorkersBlindToEachOtherFailTheCheck) {
  HOGWILD_REQUIRE_GPU();
  const test::TinySpec spec = session_specs().at(1);  // qwen2: q/k/v bias, GQA 2
  const ModelWeights w = cuda_session_model(spec);
  cuda::CudaBackend gpu(w, options());
  BlindToOthers broken(gpu);
  const CheckedRun o = run_checked(broken, w, Layout::combined, 3);
  EXPECT_EQ(o.forwards, 30);
  EXPECT_GT(o.worst, 5 * kLogitsTol) << "the reference check no longer sees a semantic bug";
  std::printf("[ broken: blind to others ] logits rel %.3g (tol %.2g)\n", o.worst, kLogitsTol);
}

}  // namespace
}  // namespace hogwild::testing
