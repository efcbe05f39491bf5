// Stop strings on streamed text (sampling/stop_strings.h), as `hogwild generate --stop` and the
// server's `stop` use them: what each push releases, what is held back, where a stop cuts.
#include <gtest/gtest.h>

#include <string>

#include "core/request_fields.h"
#include "sampling/stop_strings.h"

namespace hogwild {
namespace {

TEST(StopStrings, HoldsBackAPossibleStartAndCutsAtTheMatch) {
  StopStrings f({"END", "\xC3\xA9t\xC3\xA9"});  // "END", "été"
  EXPECT_EQ(f.push("abcE"), "abc");
  EXPECT_EQ(f.push("N"), "");
  EXPECT_EQ(f.push("X"), "ENX");
  EXPECT_EQ(f.push("x\xC3\xA9"), "x");  // "é" may start "été"
  EXPECT_EQ(f.push("s"), "\xC3\xA9s");
  EXPECT_EQ(f.push("fooE"), "foo");
  EXPECT_FALSE(f.stopped());
  EXPECT_EQ(f.push("ND rest"), "");
  EXPECT_TRUE(f.stopped());
  EXPECT_EQ(f.matched(), "END");
  EXPECT_EQ(f.push("more"), "");
  EXPECT_EQ(f.flush(), "");
}

TEST(StopStrings, EarliestMatchWinsAndFlushReturnsTheRest) {
  StopStrings f({"bc", "abcd"});
  EXPECT_EQ(f.push("xabcd"), "x");  // "abcd" starts at 1, "bc" at 2
  EXPECT_EQ(f.matched(), "abcd");
  StopStrings g({"zz"});
  EXPECT_EQ(g.push("az"), "a");
  EXPECT_EQ(g.flush(), "z");
}

TEST(StopStrings, CutsBeforeTheEarliestMatchAcrossPieces) {
  StopStrings s({"o w", "xyz"});
  EXPECT_EQ(s.push("Hel"), "Hel");
  EXPECT_EQ(s.push("lo wo"), "l");  // "o w" starts at 4 of "Hello wo": the output is "Hell"
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.matched(), "o w");
  EXPECT_EQ(s.push("more"), "");  // stays stopped
  StopStrings h({"world"});
  EXPECT_EQ(h.push("Hello wor"), "Hello ");  // "wor" may start "world": held back
  EXPECT_EQ(h.push("m"), "worm");
  EXPECT_EQ(h.flush(), "");
  EXPECT_FALSE(h.stopped());
}

// A tail that matches a stop string's start in two ways keeps the longer: "aaa" ends in "aa",
// which may still become "aab", so only the first "a" is released.
TEST(StopStrings, HoldsTheLongestPossibleStart) {
  StopStrings s({"aab"});
  EXPECT_EQ(s.push("a"), "");
  EXPECT_EQ(s.push("a"), "");
  EXPECT_EQ(s.push("a"), "a");
  EXPECT_EQ(s.push("b"), "");
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.flush(), "");
}

// Two stop strings starting at the same byte: the first listed is the one that matched.
TEST(StopStrings, ATieGoesToTheFirstListed) {
  StopStrings s({"ab", "abc"});
  EXPECT_EQ(s.push("xabc"), "x");
  EXPECT_EQ(s.matched(), "ab");
  StopStrings t({"abc", "ab"});
  EXPECT_EQ(t.push("xabc"), "x");
  EXPECT_EQ(t.matched(), "abc");
}

TEST(StopStrings, NoStopStringsReleaseEverything) {
  StopStrings s;
  EXPECT_EQ(s.push("abc"), "abc");
  EXPECT_EQ(s.flush(), "");
  EXPECT_FALSE(s.stopped());
  EXPECT_EQ(s.matched(), "");
}

TEST(StopStrings, AnEmptyStopStringIsRefused) {
  EXPECT_THROW(StopStrings({"a", ""}), RequestError);
  EXPECT_THROW(StopStrings({std::string(257, 'x')}), RequestError);
  EXPECT_NO_THROW(StopStrings({std::string(256, 'x')}));
}

}  // namespace
}  // namespace hogwild
