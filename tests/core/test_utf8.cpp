// UTF-8 validity and U+FFFD substitution against the Unicode standard's own examples (§3.9, Table
// 3-8 "U+FFFD for maximal subparts"), and JSON text that is always written.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "core/utf8.h"

namespace hogwild {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8, ValidityFollowsTable3_7) {
  EXPECT_TRUE(utf8_valid(""));
  EXPECT_TRUE(utf8_valid("plain ascii"));
  EXPECT_TRUE(utf8_valid("\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80"));  // é 中 😀
  EXPECT_FALSE(utf8_valid("\xC0\x80"));                             // overlong NUL
  EXPECT_FALSE(utf8_valid("\xE0\x80\xAF"));                         // overlong '/'
  EXPECT_FALSE(utf8_valid("\xED\xA0\x80"));                         // surrogate U+D800
  EXPECT_FALSE(utf8_valid("\xF4\x90\x80\x80"));                     // U+110000
  EXPECT_FALSE(utf8_valid("\xE4\xB8"));                             // truncated
  EXPECT_FALSE(utf8_valid("\xff\xfe"));
}

TEST(Utf8, LossyReplacesEachMaximalSubpart) {
  // Unicode 15 §3.9, Table 3-8: 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64
  //   -> a FFFD FFFD FFFD b FFFD c FFFD FFFD d
  EXPECT_EQ(utf8_lossy("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64"),
            "a" + kFffd + kFffd + kFffd + "b" + kFffd + "c" + kFffd + kFffd + "d");
  EXPECT_EQ(utf8_lossy("\xC0\x80"), kFffd + kFffd);            // C0 is never a lead byte
  EXPECT_EQ(utf8_lossy("\xED\xA0\x80x"), kFffd + kFffd + kFffd + "x");  // ED A0: not a prefix
  EXPECT_EQ(utf8_lossy("ab\xE4\xB8"), "ab" + kFffd);          // one truncated character
  EXPECT_EQ(utf8_lossy("\xff\xfe"), kFffd + kFffd);
  EXPECT_EQ(utf8_lossy("\xC3\xA9"), "\xC3\xA9");
}

TEST(Utf8, CompletePrefixHoldsBackOnlyACharacterStillBeingWritten) {
  EXPECT_EQ(utf8_complete_prefix(""), 0u);
  EXPECT_EQ(utf8_complete_prefix("abc"), 3u);
  EXPECT_EQ(utf8_complete_prefix("ab\xE4"), 2u);          // 1 of 3 bytes
  EXPECT_EQ(utf8_complete_prefix("ab\xE4\xB8"), 2u);      // 2 of 3 bytes
  EXPECT_EQ(utf8_complete_prefix("ab\xE4\xB8\xAD"), 5u);  // complete
  EXPECT_EQ(utf8_complete_prefix("ab\xF0\x9F\x98"), 2u);  // 3 of 4 bytes
  EXPECT_EQ(utf8_complete_prefix("ab\xff"), 3u);          // invalid, not incomplete: shown as FFFD
  EXPECT_EQ(utf8_complete_prefix("ab\xED\xA0"), 4u);      // a surrogate can never complete
  EXPECT_EQ(utf8_complete_prefix("\x80\x80\x80\x80"), 4u);
}

TEST(JsonText, InvalidBytesAreWrittenWithTheirRawBytesBeside) {
  nlohmann::json j = nlohmann::json::object();
  set_text(j, "text", "ok\xE4\xB8");
  set_text(j, "clean", "fine");
  EXPECT_EQ(j["text"], "ok" + kFffd);
  EXPECT_EQ(j["text_bytes"], nlohmann::json({111, 107, 0xE4, 0xB8}));
  EXPECT_FALSE(j.contains("clean_bytes"));
  // A string that slipped through as raw bytes is still dumped (never type_error 316).
  nlohmann::json raw = {{"x", std::string("\xff\xfe")}};
  EXPECT_THROW((void)raw.dump(), nlohmann::json::type_error);
  EXPECT_EQ(dump_json(raw), "{\"x\":\"" + kFffd + kFffd + "\"}");
}

}  // namespace
}  // namespace hogwild
