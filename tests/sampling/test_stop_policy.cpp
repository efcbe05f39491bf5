// The stop policy of every command (sampling/stop_policy.h): the EOS set is the union of the
// tokenizer's eos_token, config.json and generation_config.json, in that order; ids outside the
// vocabulary and an eos_token that names no token are refused.
#include <gtest/gtest.h>

#include <functional>

#include "core/error.h"
#include "sampling/stop_policy.h"

namespace hogwild {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Llama-3 Instruct: tokenizer_config eos_token <|eot_id|> (128009), config.json 128001,
// generation_config.json [128001, 128008, 128009]. Generation must stop at the end of the turn.
TEST(StopPolicy, UnionOfTheThreeSourcesTokenizerFirst) {
  const StopPolicy p = resolve_stop_policy(TokenizerEos{"<|eot_id|>", 128009}, {128001},
                                           {128001, 128008, 128009}, 128256);
  EXPECT_EQ(p.eos_ids, (std::vector<int32_t>{128009, 128001, 128008}));
  ASSERT_EQ(p.sources.size(), 3u);
  EXPECT_EQ(p.sources[0], "tokenizer_config.json eos_token '<|eot_id|>', generation_config.json");
  EXPECT_EQ(p.sources[1], "config.json, generation_config.json");
  EXPECT_EQ(p.sources[2], "generation_config.json");
  EXPECT_EQ(p.stop_ids(), p.eos_ids);
  EXPECT_EQ(p.describe(),
            "128009 (tokenizer_config.json eos_token '<|eot_id|>', generation_config.json), "
            "128001 (config.json, generation_config.json), 128008 (generation_config.json)");
  EXPECT_EQ(eos_id_union({7}, {7, 3}, {3, 9}), (std::vector<int32_t>{7, 3, 9}));
}

TEST(StopPolicy, IgnoreEosKeepsTheIdsButStopsOnNone) {
  const StopPolicy p = resolve_stop_policy(std::nullopt, {2}, {}, 100, /*ignore_eos=*/true);
  EXPECT_EQ(p.eos_ids, (std::vector<int32_t>{2}));
  EXPECT_TRUE(p.stop_ids().empty());
  EXPECT_EQ(p.describe(), "2 (config.json), ignored (--ignore-eos)");
  EXPECT_EQ(resolve_stop_policy(std::nullopt, {}, {}, 100).describe(),
            "none (no eos_token or eos_token_id anywhere)");
}

TEST(StopPolicy, IdsOutsideTheVocabularyAreRefused) {
  EXPECT_EQ(error_of([] { resolve_stop_policy(std::nullopt, {512}, {}, 512); }),
            "config.json: eos_token_id 512 is outside the vocabulary [0, 512) (vocab_size in "
            "config.json); fix eos_token_id");
  EXPECT_EQ(error_of([] { resolve_stop_policy(std::nullopt, {1}, {-1}, 512); }),
            "generation_config.json: eos_token_id -1 is outside the vocabulary [0, 512) "
            "(vocab_size in config.json); fix eos_token_id");
  EXPECT_EQ(error_of([] { resolve_stop_policy(TokenizerEos{"</s>", std::nullopt}, {}, {}, 512); }),
            "tokenizer_config.json: eos_token '</s>' is not a token of tokenizer.json, so "
            "generation could never stop on it; set eos_token to the model's end-of-turn token "
            "(or null)");
  EXPECT_NE(error_of([] { resolve_stop_policy(TokenizerEos{"<e>", 600}, {}, {}, 512); })
                .find("id 600, outside the model's vocabulary [0, 512)"),
            std::string::npos);
}

}  // namespace
}  // namespace hogwild
