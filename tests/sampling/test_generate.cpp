// Plain completions on the Engine (engine/plain.h): stop conditions and the logits of every
// position on a scripted backend, greedy and seeded decoding on a tiny CpuBackend model against
// the dense reference, stop strings, the .npy logits format.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <span>

#include "core/error.h"
#include "cpu/cpu_backend.h"
#include "engine/plain.h"
#include "hogwild/codec.h"
#include "sampling/npy.h"
#include "sampling/row_draw.h"
#include "sampling/stop_strings.h"
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
    ++created;
    len_.push_back(0);
    return static_cast<BlockId>(len_.size() - 1);
  }
  void free_block(BlockId) override { ++freed; }
  int64_t block_len(BlockId b) const override { return len_[b]; }
  void truncate_block(BlockId b, int64_t n) override { len_[b] = n; }
  void append_block(BlockId, BlockId) override {}
  void read_block(BlockId, int64_t, std::vector<float>&, std::vector<float>&) const override {}
  using Backend::forward;
  void forward(const ForwardBatch& b, ForwardResult& out) override {
    check_row_sampling(b);
    std::vector<float>& logits = out.logits;
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
    draw_on_host(b, cfg_.vocab_size, out);
  }
  int64_t kv_used_tokens() const override { return 0; }
  int64_t live_blocks() const override { return 0; }
  int forwards = 0, created = 0, freed = 0;
  std::vector<int32_t> fed;

 private:
  ModelConfig cfg_;
  std::vector<int64_t> len_;
};

// A greedy plain request of prompt and max_tokens that no id ends (as a request without stop ids).
PlainRequest plain(std::vector<int32_t> prompt, int64_t max_tokens) {
  PlainRequest p;
  p.prompt = std::move(prompt);
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  return p;
}

PlainResult generate(Backend& be, PlainRequest p,
                     const std::function<bool(int32_t)>& on_token = {}) {
  const IdCodec codec(static_cast<int32_t>(be.config().vocab_size));
  return generate_plain(be, codec, std::move(p), on_token);
}

TEST(Generate, StopsAtEosAndMaxTokens) {
  CountingBackend be(20, 100);
  PlainRequest p = plain({3, 4}, 10);
  p.stop_ids = {7};
  p.ignore_eos = false;
  std::vector<int32_t> streamed;
  PlainResult r = generate(be, p, [&](int32_t t) {
    streamed.push_back(t);
    return false;
  });
  EXPECT_EQ(r.generated, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(streamed, r.generated);
  EXPECT_EQ(r.stop_reason, StopReason::eos);
  EXPECT_EQ(be.forwards, 3);  // prefill + feeding 5 and 6; EOS is not fed
  EXPECT_EQ(be.freed, be.created);
  r = generate(be, plain({3, 4}, 4));
  EXPECT_EQ(r.generated, (std::vector<int32_t>{5, 6, 7, 8}));
  EXPECT_EQ(r.stop_reason, StopReason::max_new_tokens);
}

TEST(Generate, ContextLimit) {
  CountingBackend be(20, 5);
  PlainResult r = generate(be, plain({1, 2, 3}, 10));
  EXPECT_EQ(r.generated, (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(r.stop_reason, StopReason::context_length);
  // A prompt that fills the context leaves no room: an error (as in `hogwild run`), except when
  // no new token is asked for (the prompt's logits only, `generate -n 0`).
  try {
    generate(be, plain({1, 2, 3, 4, 5}, 10));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("5 tokens, which leaves no room to generate"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(check_plain_prompt(be.config(), {1, 2, 3, 4, 5}, 0, 0));
  try {
    generate(be, plain({1, 2, 3, 4, 5, 6}, 10));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("6 tokens"), std::string::npos) << e.what();
  }
  EXPECT_THROW(check_plain_prompt(be.config(), {1, 2, 3, 4, 5, 6}, 0, 0), Error);
  EXPECT_THROW(generate(be, plain({}, 10)), Error);
  EXPECT_THROW(generate(be, plain({25}, 10)), Error);
}

TEST(Generate, LogitRowsCoverEveryPosition) {
  CountingBackend be(20, 100);
  PlainResult r = generate(be, plain({3, 4}, 3));
  ASSERT_EQ(r.generated, (std::vector<int32_t>{5, 6, 7}));
  std::vector<float> rows;
  int64_t n_rows = 0;
  be.fed.clear();
  // Rows for positions of 3 4 5 6 7 (the last generated token is fed for its row), in chunks.
  const std::vector<int32_t> seq = {3, 4, 5, 6, 7};
  sequence_logits(be, seq, 2, [&](const float* l, int64_t n) {
    rows.insert(rows.end(), l, l + n * 20);
    n_rows += n;
  });
  ASSERT_EQ(n_rows, 5);
  for (int i = 0; i < 5; ++i) {
    const auto it = std::max_element(rows.begin() + i * 20, rows.begin() + (i + 1) * 20);
    EXPECT_EQ(it - (rows.begin() + i * 20), (seq[i] + 1) % 20);
  }
  EXPECT_EQ(be.fed, (std::vector<int32_t>{3, 4, 5, 6, 7}));
  EXPECT_EQ(be.freed, be.created);
}

TEST(Generate, GreedyOnCpuBackendMatchesDenseReference) {
  const ModelConfig cfg = test::tiny_config(test::tiny_spec("q3", Arch::qwen3, false, true, false));
  const ModelWeights w = test::tiny_weights(cfg, 31);
  cpu::CpuBackend be(w);
  const std::vector<int32_t> prompt = {5, 17, 2, 40, 33};
  PlainResult r = generate(be, plain(prompt, 12));
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

TEST(Generate, StopStringsStopTheRun) {
  CountingBackend be(20, 100);
  StopStrings stop({"67"});
  std::string text;
  PlainResult r = generate(be, plain({3}, 10), [&](int32_t t) {
    text += stop.push(std::to_string(t));
    return stop.stopped();
  });
  EXPECT_EQ(r.generated, (std::vector<int32_t>{4, 5, 6, 7}));
  EXPECT_EQ(r.stop_reason, StopReason::stop_string);
  EXPECT_EQ(text, "45");
  EXPECT_EQ(be.forwards, 4);  // prefill + feeding 4, 5, 6; the token completing it is not fed
}

// The stop rules where plain generation could go either way, decided as HF transformers'
// generate() and vLLM decide them (engine/plain.h).

// max_tokens 1: the token drawn from the prompt's row, then "length" (vLLM's finish_reason; HF
// stops at max_new_tokens), not an end of sequence that was never drawn.
TEST(Generate, OneTokenStopsForLength) {
  CountingBackend be(20, 100);
  PlainRequest p = plain({3}, 1);
  p.stop_ids = {7};
  p.ignore_eos = false;
  const PlainResult r = generate(be, p);
  EXPECT_EQ(r.generated, (std::vector<int32_t>{4}));
  EXPECT_EQ(r.stop_reason, StopReason::max_new_tokens);
  EXPECT_EQ(r.session.stop_reason, StopReason::max_tokens);
  EXPECT_EQ(be.forwards, 1);  // the prefill alone
}

// An end-of-sequence id drawn as the last token allowed ends the run as eos (vLLM: "stop"), and
// it wins over a stop string it completes.
TEST(Generate, EosWinsOverLengthAndStopStrings) {
  CountingBackend be(20, 100);
  PlainRequest p = plain({3, 4}, 3);
  p.stop_ids = {7};
  p.ignore_eos = false;
  PlainResult r = generate(be, p);
  EXPECT_EQ(r.generated, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(r.stop_reason, StopReason::eos);
  EXPECT_EQ(r.session.stop_reason, StopReason::eos);
  p.max_tokens = 10;
  StopStrings stop({"67"});
  std::string text;
  r = generate(be, p, [&](int32_t t) {
    text += stop.push(std::to_string(t));
    return stop.stopped();
  });
  EXPECT_EQ(r.generated, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(r.stop_reason, StopReason::eos);
  EXPECT_EQ(text + stop.flush(), "5");
}

// ignore_eos (vLLM's): an end-of-sequence id is drawn and fed like any other token.
TEST(Generate, IgnoreEosFeedsTheEndOfSequenceId) {
  CountingBackend be(20, 100);
  PlainRequest p = plain({3, 4}, 5);
  p.stop_ids = {7};
  const PlainResult r = generate(be, p);
  EXPECT_EQ(r.generated, (std::vector<int32_t>{5, 6, 7, 8, 9}));
  EXPECT_EQ(r.stop_reason, StopReason::max_new_tokens);
  EXPECT_EQ(be.fed, (std::vector<int32_t>{3, 4, 5, 6, 7, 8}));
}

// A seed draws what a Sampler with that seed draws from the model's logits, token by token (the
// stream of the sampling library, so a seed gives the same text in every command).
TEST(Generate, SeededSamplingDrawsAsTheSamplerWithThatSeed) {
  const ModelConfig cfg = test::tiny_config(test::tiny_spec("q3", Arch::qwen3, false, true, false));
  const ModelWeights w = test::tiny_weights(cfg, 31);
  cpu::CpuBackend be(w);
  const std::vector<int32_t> prompt = {5, 17, 2, 40, 33};
  PlainRequest p = plain(prompt, 8);
  p.sampling.do_sample = true;
  p.sampling.temperature = 1.5f;
  p.sampling.top_k = 0;
  p.sampling.seed = 11;
  const PlainResult r = generate(be, p);
  ASSERT_EQ(r.generated.size(), 8u);
  Sampler ref(p.sampling);
  std::vector<int32_t> seq = prompt;
  const int64_t V = cfg.vocab_size;
  for (size_t i = 0; i < r.generated.size(); ++i) {
    const std::vector<float> l = test::dense_logits(w, seq);
    EXPECT_EQ(r.generated[i], ref.sample(std::span<const float>(l.data() + l.size() - V, V), seq))
        << "token " << i;
    seq.push_back(r.generated[i]);
  }
  std::set<int32_t> distinct(r.generated.begin(), r.generated.end());
  EXPECT_GT(distinct.size(), 1u) << "not a sampled run";
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
