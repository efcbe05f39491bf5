// Packs of word problems (src/collab/problems.h): values recomputed from the text alone, the
// held-out splits, determinism.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "collab/problems.h"
#include "core/error.h"

namespace hogwild::collab {
namespace {

// The number of a sentence: its digits, or a number word ("five", "twice" = 2); -1 if none.
int64_t number_in(const std::string& s) {
  std::smatch m;
  if (std::regex_search(s, m, std::regex(R"((\d+))"))) return std::stoll(m[1]);
  if (s.find("twice") != std::string::npos) return 2;
  static const char* words[] = {"two",   "three", "four", "five", "six",
                                "seven", "eight", "nine", "ten"};
  for (int i = 0; i < 9; ++i)
    if (std::regex_search(s, std::regex(std::string("\\b") + words[i] + "\\b", std::regex::icase)))
      return i + 2;
  return -1;
}

// Recomputes a part's result from its text with the cue words only: the first number starts,
// then "N more" adds, "N ... away" subtracts, "N times" (or "twice") multiplies.
int64_t solve_text(const std::string& text) {
  static const std::regex sentence(R"(([^.?]*[.?]))");
  int64_t v = -1;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), sentence);
       it != std::sregex_iterator(); ++it) {
    const std::string s = (*it)[1];
    const int64_t n = number_in(s);
    if (n < 0) continue;
    if (v < 0)
      v = n;
    else if (s.find(" times") != std::string::npos || s.find("twice") != std::string::npos)
      v *= n;
    else if (s.find(" more") != std::string::npos)
      v += n;
    else if (s.find(" away") != std::string::npos)
      v -= n;
    else
      ADD_FAILURE() << "no operation cue in: " << s;
  }
  return v;
}

TEST(CollabProblems, HandCheckedPack) {
  // hogwild collab problems --split test --k 4 --seed 11: pack 0 (seed 11 * 1000003).
  const Pack p = make_pack(Split::test, 4, 11000033);
  ASSERT_EQ(p.parts.size(), 4u);
  EXPECT_EQ(p.parts[1].text,
            "Owen starts with 52 toys. Then Owen has four times as many. Next, he gives 29 toys "
            "away to a friend. How many toys are there now?");
  EXPECT_EQ(p.parts[1].equations(), "52 * 4 = 208. 208 - 29 = 179.");  // by hand
  EXPECT_EQ(p.parts[1].result, 179);
  EXPECT_EQ(p.text.substr(0, 8), "Part 1: ");
  EXPECT_NE(p.text.find("\nPart 4: "), std::string::npos);
  EXPECT_EQ(p.text.substr(p.text.size() - kPackQuestion.size()), kPackQuestion);
  int64_t total = 0;
  for (const Part& part : p.parts) total += part.result;
  EXPECT_EQ(p.total, total);
}

TEST(CollabProblems, TheFirstWordingIsKept) {
  // The packs the first model was measured on (hogwild collab problems --wording first ...).
  const Pack p = make_pack(Split::test, 4, 11000033, Wording::first);
  EXPECT_EQ(p.parts[1].text,
            "Omar saves 77 coins. He finds 74 more coins. He finds 32 more coins. How many coins "
            "does Omar have?");
  EXPECT_EQ(p.parts[1].result, 183);
  for (uint64_t seed = 0; seed < 20; ++seed)
    for (Split split : {Split::train, Split::test, Split::test_frames})
      for (const Part& part : make_pack(split, 5, seed, Wording::first).parts)
        EXPECT_EQ(solve_text(part.text), part.result) << part.text;
}

TEST(CollabProblems, ResultsFollowFromTheText) {
  for (Split split : {Split::train, Split::test, Split::test_frames})
    for (int k = 1; k <= 9; ++k)
      for (uint64_t seed = 0; seed < 30; ++seed) {
        const Pack p = make_pack(split, k, seed);
        ASSERT_EQ(static_cast<int>(p.parts.size()), k);
        for (const Part& part : p.parts) {
          EXPECT_EQ(solve_text(part.text), part.result) << part.text;
          EXPECT_GE(part.ops.size(), 2u);
          EXPECT_LE(part.ops.size(), 5u);
          int64_t v = part.start;
          int muls = 0;
          for (const Operation& op : part.ops) {
            if (op.op == '*') {
              EXPECT_LE(v, 99);
              EXPECT_LE(op.operand, 9);
              ++muls;
            }
            v = op.op == '+' ? v + op.operand : op.op == '-' ? v - op.operand : v * op.operand;
            EXPECT_GE(v, 0);
            EXPECT_LE(v, 9999);
          }
          EXPECT_LE(muls, 1);
        }
      }
}

// A sentence with its numbers replaced, so frames can be compared across packs.
std::set<std::string> frames_of(Split split, int n) {
  std::set<std::string> out;
  static const std::regex num(R"(\d+)");
  for (int seed = 0; seed < n; ++seed)
    for (const Part& part : make_pack(split, 8, seed).parts) {
      static const std::regex sentence(R"(([^.?]*[.?]))");
      for (auto it = std::sregex_iterator(part.text.begin(), part.text.end(), sentence);
           it != std::sregex_iterator(); ++it)
        out.insert(std::regex_replace(std::string((*it)[1]), num, "N"));
    }
  return out;
}

// The first and last sentences (start, question) of every story, numbers replaced.
std::set<std::string> ends_of(Split split, int n) {
  std::set<std::string> out;
  static const std::regex num(R"(\d+)");
  static const std::regex sentence(R"(([^.?]*[.?]))");
  for (int seed = 0; seed < n; ++seed)
    for (const Part& part : make_pack(split, 8, seed).parts) {
      std::vector<std::string> ss;
      for (auto it = std::sregex_iterator(part.text.begin(), part.text.end(), sentence);
           it != std::sregex_iterator(); ++it)
        ss.push_back(std::regex_replace(std::string((*it)[1]), num, "N"));
      out.insert("start:" + ss.front());
      out.insert("question:" + ss.back());
    }
  return out;
}

TEST(CollabProblems, TestFramesNeverOccurInTraining) {
  // Every test-frames story starts and ends with sentences that no training story has.
  const auto train = ends_of(Split::train, 300);
  const auto held = ends_of(Split::test_frames, 100);
  ASSERT_GT(held.size(), 20u);
  for (const std::string& s : held) EXPECT_EQ(train.count(s), 0u) << s;
}

TEST(CollabProblems, TheGrammarGivesHundredsOfFrames) {
  EXPECT_GT(frames_of(Split::train, 300).size(), 300u);
  EXPECT_GT(frames_of(Split::test_frames, 100).size(), 100u);
}

TEST(CollabProblems, SplitsHaveTheirOwnSeedSpaces) {
  for (uint64_t seed = 0; seed < 50; ++seed) {
    EXPECT_NE(make_pack(Split::train, 4, seed).text, make_pack(Split::test, 4, seed).text);
    EXPECT_EQ(make_pack(Split::test, 4, seed).text, make_pack(Split::test, 4, seed).text);
  }
  EXPECT_EQ(split_name(parse_split("test-frames")), "test-frames");
  EXPECT_THROW(parse_split("dev"), Error);
  EXPECT_THROW(make_pack(Split::train, 0, 1), Error);
  EXPECT_THROW(make_pack(Split::train, 10, 1), Error);
}

}  // namespace
}  // namespace hogwild::collab
