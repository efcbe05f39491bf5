// Plain generation driver: stop conditions and logit rows on a scripted backend, greedy decoding on
// a tiny CpuBackend model against the dense reference, stop strings, the .npy logits format.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "cpu/cpu_backend.h"
#include "sampling/generate.h"
#include "sampling/npy.h"
#include "sampling/row_draw.h"
#include "tests/cpu/reference_model.h"
#include "tests/cpu/tiny_model.h"

namespace hogwild {
namespace {

// Logits of a token t: 10 at (t + 1) % V, 0 elsewhere: greedy counts upwards.
class CountingBackend : public Backend {
 public:
  explicit CountingBackend(int64_t vocab, int64_t ctx) {
    cfg_.vocab_size = vocab;
    cfg_.max_position_embeddings = ctx;
  }
  const ModelConfig& config() const override { return cfg_; }
  BlockId new_block() override {
    len_.push_back(0);
    return static_cast<BlockId>(len_.size() - 1);
  }
  void free_block(BlockId) override { ++freed; }
  int64_t block_len(BlockId b) const override { return len_[b]; }
  void truncate_block(BlockId b, int64_t n) override { len_[b] = n; }
  void append_block(BlockId, BlockId) override {}
  void read_block(BlockId, int64_t, std::vector<float>&, std::vector<float>&) const override {}
  void forward(const ForwardBatch& b, std::vector<float>& logits) override {
    logits.clear();
    ++forwards;
    for (const TokenInput& t : b.tokens) {
      ++len_[t.block];
      fed.push_back(t.token_id);
      if (!t.want_logits) continue;
      std::vector<float> row(cfg_.vocab_size, 0.0f);
      row[(t.token_id + 1) % cfg_.vocab_size] = 10.0f;
      logits.insert(logits.end(), row.begin(), row.end());
    }
  }
  void forward_sample(const ForwardBatch& b, const std::vector<std::vector<int32_t>>& sets,
                      const std::vector<RowSampling>& rows, std::vector<int32_t>& t) override {
    forward_sample_on_host(*this, b, sets, rows, t);
  }
  int64_t kv_used_tokens() const override { return 0; }
  int64_t live_blocks() const override { return 0; }
  int forwards = 0, freed = 0;
  std::vector<int32_t> fed;

 private:
  ModelConfig cfg_;
  std::vector<int64_t> len_;
};

Sampler greedy() { return Sampler(SamplingParams{}); }

TEST(Generate, StopsAtEosAndMaxTokens) {
  CountingBackend be(20, 100);
  Sampler s = greedy();
  GenerateOptions o;
  o.max_new_tokens = 10;
  o.eos_token_ids = {7};
  std::vector<int32_t> streamed;
  o.on_token = [&](int32_t t) { streamed.push_back(t); };
  const std::vector<int32_t> prompt = {3, 4};
  GenerateResult r = generate(be, prompt, s, o);
  EXPECT_EQ(r.generated, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(streamed, r.generated);
  EXPECT_EQ(r.stop_reason, StopReason::eos);
  EXPECT_EQ(be.forwards, 3);  // prefill + feeding 5 and 6; EOS is not fed
  EXPECT_EQ(be.freed, 1);
  o.eos_token_ids = {};
  o.max_new_tokens = 4;
  r = generate(be, prompt, s, o);
  EXPECT_EQ(r.generated, (std::vector<int32_t>{5, 6, 7, 8}));
  EXPECT_EQ(r.stop_reason, StopReason::max_new_tokens);
}

TEST(Generate, ContextLimit) {
  CountingBackend be(20, 5);
  Sampler s = greedy();
  GenerateOptions o;
  o.max_new_tokens = 10;
  GenerateResult r = generate(be, std::vector<int32_t>{1, 2, 3}, s, o);
  EXPECT_EQ(r.generated, (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(r.stop_reason, StopReason::context_length);
  // A prompt that fills the context leaves no room: an error (as in `hogwild run`), except when
  // no new token is asked for (the prompt's logits only).
  try {
    generate(be, std::vector<int32_t>{1, 2, 3, 4, 5}, s, o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("5 tokens, which leaves no room to generate"),
              std::string::npos)
        << e.what();
  }
  o.max_new_tokens = 0;
  r = generate(be, std::vector<int32_t>{1, 2, 3, 4, 5}, s, o);
  EXPECT_TRUE(r.generated.empty());
  EXPECT_EQ(r.stop_reason, StopReason::max_new_tokens);
  o.max_new_tokens = 10;
  try {
    generate(be, std::vector<int32_t>{1, 2, 3, 4, 5, 6}, s, o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("6 tokens"), std::string::npos) << e.what();
  }
  EXPECT_THROW(generate(be, std::vector<int32_t>{}, s, o), Error);
  EXPECT_THROW(generate(be, std::vector<int32_t>{25}, s, o), Error);
}

TEST(Generate, LogitRowsCoverEveryPosition) {
  CountingBackend be(20, 100);
  Sampler s = greedy();
  GenerateOptions o;
  o.max_new_tokens = 3;
  std::vector<float> rows;
  int64_t n_rows = 0;
  o.on_logits = [&](const float* l, int64_t n) {
    rows.insert(rows.end(), l, l + n * 20);
    n_rows += n;
  };
  GenerateResult r = generate(be, std::vector<int32_t>{3, 4}, s, o);
  ASSERT_EQ(r.generated, (std::vector<int32_t>{5, 6, 7}));
  // Rows for positions of 3 4 5 6 7 (the last generated token is fed once more for its row).
  ASSERT_EQ(n_rows, 5);
  const std::vector<int32_t> seq = {3, 4, 5, 6, 7};
  for (int i = 0; i < 5; ++i) {
    const auto it = std::max_element(rows.begin() + i * 20, rows.begin() + (i + 1) * 20);
    EXPECT_EQ(it - (rows.begin() + i * 20), (seq[i] + 1) % 20);
  }
  EXPECT_EQ(be.fed, (std::vector<int32_t>{3, 4, 5, 6, 7}));
}

TEST(Generate, GreedyOnCpuBackendMatchesDenseReference) {
  const ModelConfig cfg = test::tiny_config(test::tiny_spec("q3", Arch::qwen3, false, true, false));
  const ModelWeights w = test::tiny_weights(cfg, 31);
  cpu::CpuBackend be(w);
  Sampler s = greedy();
  GenerateOptions o;
  o.max_new_tokens = 12;
  const std::vector<int32_t> prompt = {5, 17, 2, 40, 33};
  GenerateResult r = generate(be, prompt, s, o);
  ASSERT_EQ(r.generated.size(), 12u);
  // Dense forward over prompt ++ generated: each generated token is the argmax of the previous
  // position's logits.
  std::vector<int32_t> seq = prompt;
  seq.insert(seq.end(), r.generated.begin(), r.generated.end());
  const std::vector<float> ref = test::dense_logits(w, seq);
  const int64_t V = cfg.vocab_size;
  for (size_t i = 0; i < r.generated.size(); ++i) {
    const size_t pos = prompt.size() - 1 + i;
    const auto it = std::max_element(ref.begin() + pos * V, ref.begin() + (pos + 1) * V);
    EXPECT_EQ(r.generated[i], it - (ref.begin() + pos * V)) << "step " << i;
  }
}

TEST(StopStrings, CutsBeforeTheEarliestMatchAcrossPieces) {
  StopStrings s({"o w", "xyz"});
  EXPECT_FALSE(s.push("Hel"));
  EXPECT_TRUE(s.push("lo wo"));
  EXPECT_EQ(s.text(), "Hell");
  EXPECT_TRUE(s.push("more"));  // stays stopped
  EXPECT_EQ(s.text(), "Hell");
  StopStrings h({"world"});
  h.push("Hello wor");
  EXPECT_EQ(h.safe_length(), 6u);  // "wor" may start "world": held back
  h.push("m");
  EXPECT_EQ(h.safe_length(), 10u);
}

TEST(Generate, StopStringsNeedTextAndStopTheRun) {
  CountingBackend be(20, 100);
  Sampler s = greedy();
  GenerateOptions o;
  o.max_new_tokens = 10;
  o.stop_strings = {"67"};
  EXPECT_THROW(generate(be, std::vector<int32_t>{3}, s, o), Error);  // no decode hook
  o.decode_piece = [](int32_t t) { return std::to_string(t); };
  GenerateResult r = generate(be, std::vector<int32_t>{3}, s, o);
  EXPECT_EQ(r.generated, (std::vector<int32_t>{4, 5, 6, 7}));
  EXPECT_EQ(r.stop_reason, StopReason::stop_string);
  EXPECT_EQ(r.text, "45");
}

TEST(Npy, HeaderAndDataAsNumpyWritesThem) {
  const std::string path = testing::TempDir() + "/hogwild_npy_test.npy";
  {
    NpyWriter w(path, 3);
    const float a[6] = {1, 2, 3, 4, 5, 6};
    w.append(a, 2);
    w.append(a, 1);
    w.close();
  }
  std::ifstream f(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_EQ(bytes.size(), 128u + 9 * 4);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const uint16_t hl = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
  EXPECT_EQ(hl, 118);
  const std::string header = bytes.substr(10, hl);
  EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 3), }", 0), 0u);
  EXPECT_EQ(header.back(), '\n');
  float last;
  std::memcpy(&last, bytes.data() + 128 + 8 * 4, 4);
  EXPECT_EQ(last, 3.0f);
  std::remove(path.c_str());
  EXPECT_THROW(NpyWriter("/nonexistent-dir/x.npy", 3), Error);
}

}  // namespace
}  // namespace hogwild
