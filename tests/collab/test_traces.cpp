// Scripted sessions (src/collab/traces.h): real Sessions over the bookkeeping backend whose
// workers follow the oracle. Every run must end with the pack's total; the examples must hold
// the worker's view with the loss on its own generated tokens only.
#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "collab/bookkeeping_backend.h"
#include "collab/traces.h"
#include "core/error.h"
#include "hogwild/codec.h"
#include "tokenizer/tokenizer.h"

namespace hogwild::collab {
namespace {

const std::string kModel = std::string(HOGWILD_SOURCE_DIR) + "/models/packs-collab";

struct Text {
  Formatting fmt = load_formatting(kModel + "/hogwild_format.json");
  chat::ChatTemplate tmpl = chat::ChatTemplate::load(kModel);
  Tokenizer tok = Tokenizer::from_dir(kModel);
  TokenizerCodec codec{tok};
};
const Text& text() {
  static const Text t;
  return t;
}

TEST(CollabBookkeeping, KeepsLengthsOnly) {
  BookkeepingBackend b(10, 100);
  const BlockId h = b.new_block(), s = b.new_block();
  ForwardBatch batch;
  batch.views = {{h, s}};
  batch.tokens = {{1, 0, h, false}, {2, 0, s, false}, {3, 0, s, true}};
  std::vector<float> logits;
  b.forward(batch, logits);
  EXPECT_EQ(b.block_len(h), 1);
  EXPECT_EQ(b.block_len(s), 2);
  EXPECT_EQ(logits, std::vector<float>(10, 0.0f));
  b.append_block(h, s);
  EXPECT_EQ(b.block_len(h), 3);
  b.free_block(s);
  EXPECT_THROW(b.block_len(s), Error);
  EXPECT_EQ(b.new_block(), s);  // ids are reused
  batch.tokens = {{10, 0, h, true}};
  EXPECT_THROW(b.forward(batch, logits), Error);  // outside the vocabulary
}

TEST(CollabTraces, HandCheckedTwoWorkerRun) {
  TraceSpec spec;
  spec.k = 2;
  spec.pack_seed = 5;
  spec.n_workers = 2;
  spec.collab_every = 0;
  const Trace t = run_trace(spec, text().fmt, &text().tmpl, text().codec);
  ASSERT_TRUE(t.correct);
  // The arithmetic follows the parts of make_pack(train, 2, 5), checked by hand.
  const std::string& h = t.result.history_text;
  const std::string steps = h.substr(h.find("<|assistant|>\n") + 14);
  // Alice writes the last result, so the total (the root of the sum tree) is hers.
  EXPECT_EQ(steps,
            "Alice: Left: 1, 2. I take part 1.\n\n"
            "Bob: Left: 1, 2. I take part 2.\n\n"
            "Bob: Part 2: 7 + 83 = 90. 90 + 37 = 127. 127 + 23 = 150. 150 - 39 = 111. Part 2 = "
            "111.\n\n"
            "Alice: Part 1: 78 + 76 = 154. 154 + 57 = 211. 211 - 24 = 187. 187 - 67 = 120. 120 - "
            "4 = 116. Part 1 = 116.\n\n"
            "Bob: Left: 1 (Alice). Nothing is free, so I stop.\n\n");
  EXPECT_EQ(t.result.unfinished.at(0),
            "Alice: Left: none. All parts are done: 116 + 111 = 227. The total is \\boxed{227");
  EXPECT_EQ(t.result.unfinished.at(1), "Bob:");  // stopped with EOS
  EXPECT_EQ(*t.result.answer, "227");
}

TEST(CollabTraces, EveryLayoutAndWorkerCountReachesTheTotal) {
  for (Layout layout : {Layout::combined, Layout::interleaved, Layout::contiguous})
    for (int w : {1, 2, 3, 5, 8})
      for (int k : {2, 5, 8})
        for (uint64_t seed : {1, 2}) {
          TraceSpec spec;
          spec.k = k;
          spec.pack_seed = seed * 100 + k;
          spec.n_workers = w;
          spec.layout = layout;
          spec.collab_every = 64;
          spec.max_context = 4096;  // the policy, not the context of the shipped tokenizer
          spec.picker.careless = 0.3;
          spec.picker.seed = seed;
          spec.picker.whole = w == 1;
          const Trace t = run_trace(spec, text().fmt, &text().tmpl, text().codec);
          EXPECT_TRUE(t.correct) << layout_name(layout) << " w " << w << " k " << k << " seed "
                                 << seed << ": " << t.result.stop_reason;
          EXPECT_FALSE(t.examples.empty());
        }
}

// The loss is on the worker's own generated tokens: decoding the loss positions of the one-worker
// example gives exactly the run's generated text (the step prefixes are the engine's).
TEST(CollabTraces, OneWorkerExampleTrainsTheGeneratedTokens) {
  TraceSpec spec;
  spec.k = 3;
  spec.pack_seed = 9;
  spec.n_workers = 1;
  spec.collab_every = 0;
  spec.picker.whole = true;
  const Trace t = run_trace(spec, text().fmt, &text().tmpl, text().codec);
  ASSERT_TRUE(t.correct);
  ASSERT_EQ(t.examples.size(), 1u);
  const Example& e = t.examples[0];
  std::string trained, all;
  for (size_t i = 0; i < e.tokens.size(); ++i) {
    all += text().codec.token_bytes(e.tokens[i]);
    if (e.loss[i]) trained += text().codec.token_bytes(e.tokens[i]);
  }
  EXPECT_NE(all.find(t.pack.text), std::string::npos);
  std::string want;
  const std::string steps = all.substr(all.find("<|assistant|>\n") + 14);
  for (size_t pos = 0; pos < steps.size();) {  // every step without its "Alice:" prefix
    const size_t next = steps.find("\n\nAlice:", pos);
    const size_t end = next == std::string::npos ? steps.size() : next + 2;
    want += steps.substr(pos + 6, end - pos - 6);
    pos = end;
  }
  EXPECT_EQ(trained, want);
  EXPECT_NE(trained.find("The total is \\boxed{" + std::to_string(t.pack.total) + "}.\n\n"),
            std::string::npos);
}

// Out-of-range options stop generate() with a message naming the flag, before any session runs
// (parts per pack 2..9; threads 1..cpu::kMaxThreads, one output shard each).
TEST(CollabTraces, OutOfRangeOptionsAreRefused) {
  auto message = [&](const GenerateOptions& opt) {
    try {
      generate(opt, text().fmt, &text().tmpl, text().codec);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  GenerateOptions opt;
  opt.sessions = 1;
  opt.prefix = "/nonexistent/dir/traces";  // never reached
  for (int k_max : {0, 1, 10, 100}) {
    opt.mix.k_max = k_max;
    EXPECT_NE(
        message(opt).find("--k-max must be 2..9 parts per pack, got " + std::to_string(k_max)),
        std::string::npos)
        << k_max;
  }
  opt.mix.k_max = 8;
  for (int threads : {0, 100000}) {
    opt.threads = threads;
    EXPECT_NE(message(opt).find("--threads must be 1..512"), std::string::npos) << threads;
  }
  opt.threads = 1;
  opt.sessions = -2;
  EXPECT_NE(message(opt).find("--sessions must be >= 0 scripted sessions, got -2"),
            std::string::npos);
  opt.sessions = 1;
  opt.mix.careless = 2;
  EXPECT_NE(message(opt).find("--careless must be a probability in [0, 1], got 2"),
            std::string::npos);
  opt.mix.careless = 0.25;
  opt.mix.single = -0.5;
  EXPECT_NE(message(opt).find("--single must be a probability in [0, 1], got -0.5"),
            std::string::npos);
}

TEST(CollabTraces, SegmentsEndTheViewAndCarelessDigitsAreNotTrained) {
  TraceSpec spec;
  spec.k = 6;
  spec.pack_seed = 3;
  spec.n_workers = 4;
  spec.picker.careless = 1.0;  // every contested claim collides
  const Trace t = run_trace(spec, text().fmt, &text().tmpl, text().codec);
  ASSERT_TRUE(t.correct);
  EXPECT_GT(t.stats.careless_claims, 0);
  EXPECT_GT(t.stats.switches, 0);
  for (const Example& e : t.examples) {
    ASSERT_EQ(e.tokens.size(), e.loss.size());
    ASSERT_LE(e.tokens.size(), 2048u);
    // Loss flags form one run at the end (the segment), after the worker's own step prefix.
    size_t first = e.loss.size();
    for (size_t i = 0; i < e.loss.size(); ++i)
      if (e.loss[i]) {
        first = i;
        break;
      }
    const std::string tail = text().codec.bytes(
        std::vector<int32_t>(e.tokens.begin() + std::min(first, e.tokens.size()), e.tokens.end()));
    EXPECT_EQ(tail.find("Still writing"), std::string::npos);
    const std::string name = text().fmt.worker_name(e.worker) + ":";
    const std::string before =
        text().codec.bytes(std::vector<int32_t>(e.tokens.begin(), e.tokens.begin() + first));
    EXPECT_NE(before.rfind(name), std::string::npos);
  }
}

TEST(CollabTraces, GenerateWritesShards) {
  GenerateOptions opt;
  opt.sessions = 12;
  opt.threads = 2;
  opt.prefix = ::testing::TempDir() + "collab_shards";
  const GenerateSummary s = generate(opt, text().fmt, &text().tmpl, text().codec);
  EXPECT_EQ(s.sessions, 12);
  EXPECT_EQ(s.wrong, 0);
  EXPECT_GT(s.examples, 12);
  int64_t bytes = 0;
  for (int t = 0; t < 2; ++t) {
    std::FILE* f = std::fopen((opt.prefix + "." + std::to_string(t) + ".tok").c_str(), "rb");
    ASSERT_NE(f, nullptr);
    std::fseek(f, 0, SEEK_END);
    bytes += std::ftell(f);
    std::fclose(f);
  }
  EXPECT_EQ(bytes, 2 * s.tokens);
  opt.prefix = "/nonexistent-dir/x";
  EXPECT_THROW(generate(opt, text().fmt, &text().tmpl, text().codec), Error);
}

}  // namespace
}  // namespace hogwild::collab
