// Answer extraction and the finisher (src/hogwild/answer.h; docs/ARCHITECTURE.md §4).
#include <gtest/gtest.h>

#include "hogwild/answer.h"

namespace hogwild {
namespace {

using std::nullopt;
using std::optional;
using std::string;

TEST(Boxed, NestedBraces) {
  EXPECT_EQ(extract_boxed("so the answer is \\boxed{\\frac{1}{2}}."),
            optional<string>("\\frac{1}{2}"));
  EXPECT_EQ(extract_boxed("\\boxed{\\sqrt{\\frac{a}{b^{2}}}}"),
            optional<string>("\\sqrt{\\frac{a}{b^{2}}}"));
}

TEST(Boxed, RightmostWins) {
  EXPECT_EQ(extract_boxed("first \\boxed{1}, then \\boxed{2}."), optional<string>("2"));
  EXPECT_EQ(extract_boxed("\\boxed{1} \\fbox{3}"), optional<string>("3"));
}

TEST(Boxed, None) {
  EXPECT_EQ(extract_boxed("no answer here {1}"), nullopt);
  EXPECT_EQ(extract_boxed(""), nullopt);
}

TEST(Boxed, MalformedOrUnclosed) {
  EXPECT_EQ(extract_boxed("\\boxed{\\frac{1}{2}"), nullopt);
  EXPECT_EQ(extract_boxed("\\boxed{1"), nullopt);
  EXPECT_EQ(extract_boxed("\\boxedx{3}"), nullopt);  // another command
  EXPECT_EQ(extract_boxed("\\boxed"), nullopt);
  // The rightmost *complete* box counts: the unclosed one is still being written.
  EXPECT_EQ(extract_boxed("\\boxed{1} and \\boxed{2"), optional<string>("1"));
}

TEST(Boxed, EscapedBraces) {
  EXPECT_EQ(extract_boxed("\\boxed{\\{1, 2\\}}"), optional<string>("\\{1, 2\\}"));
  EXPECT_EQ(extract_boxed("\\boxed{a \\}"), nullopt);  // the escaped brace does not close
}

TEST(Boxed, SpaceFormAndWhitespace) {
  EXPECT_EQ(extract_boxed("$\\boxed 5$"), optional<string>("5"));
  EXPECT_EQ(extract_boxed("\\boxed {7}"), optional<string>("7"));
  EXPECT_EQ(extract_boxed("\\boxed{ 42 }"), optional<string>("42"));
  EXPECT_EQ(extract_boxed("\\boxed{}"), optional<string>(""));
}

TEST(PythonBlock, LastClosedBlock) {
  const char* text =
      "Try this:\n```python\nprint(1)\n```\nBetter:\n```python\nprint(2)\nprint(3)\n```\nDone.";
  EXPECT_EQ(extract_python_block(text), optional<string>("print(2)\nprint(3)"));
  EXPECT_EQ(extract_python_block("```py\nx = 1\n```"), optional<string>("x = 1"));
  EXPECT_EQ(extract_python_block("```Python3\nx = 1\n```"), optional<string>("x = 1"));
}

TEST(PythonBlock, NoneOrUnclosed) {
  EXPECT_EQ(extract_python_block("```cpp\nint x;\n```"), nullopt);
  EXPECT_EQ(extract_python_block("```python\nx = 1\n"), nullopt);
  EXPECT_EQ(extract_python_block("```python\nx = 1\n```\n```python\ny = 2\n"),
            optional<string>("x = 1"));
  // A ```python line inside a ~~~ fence is content, not a block.
  EXPECT_EQ(extract_python_block("~~~\n```python\nx\n```\n~~~\n"), nullopt);
  EXPECT_EQ(extract_python_block("inline ```python x```"), nullopt);
}

TEST(PythonBlock, EmptyBlockAndLongerFence) {
  EXPECT_EQ(extract_python_block("```python\n```"), optional<string>(""));
  EXPECT_EQ(extract_python_block("````python\ns = '```'\n```\n````"),
            optional<string>("s = '```'\n```"));
}

TEST(StepAnswer, MathAndMarker) {
  AnswerFormat math{AnswerKind::boxed, ""};
  EXPECT_EQ(step_answer("**Bob [4]:** So the total is \\boxed{12}.\n\n", math),
            optional<string>("12"));
  EXPECT_FALSE(has_final_answer("**Bob [4]:** The total is 12.\n\n", math));

  AnswerFormat code{AnswerKind::python, "Final solution:"};
  const char* scratch = "Let me try:\n```python\nprint(0)\n```\nThat fails.\n\n";
  EXPECT_FALSE(has_final_answer(scratch, code));
  const char* final_step =
      "Checked.\n```python\nprint(0)\n```\nFinal solution:\n```python\nprint(42)\n```\n\n";
  EXPECT_EQ(step_answer(final_step, code), optional<string>("print(42)"));
}

TEST(Finisher, Boxed) {
  // The suffix already opened "\boxed{"; greedy decoding continues from there.
  EXPECT_EQ(finish_answer("\\frac{1}{2}}.\n\nSo", AnswerKind::boxed),
            optional<string>("\\frac{1}{2}"));
  EXPECT_EQ(finish_answer(" 42 }", AnswerKind::boxed), optional<string>("42"));
  EXPECT_EQ(finish_answer("\\frac{1}{2", AnswerKind::boxed), nullopt);
  EXPECT_FALSE(finisher_done("\\frac{1}", AnswerKind::boxed));
  EXPECT_TRUE(finisher_done("\\frac{1}{2}}", AnswerKind::boxed));
}

TEST(Finisher, Python) {
  EXPECT_EQ(finish_answer("print(1)\n```\nmore", AnswerKind::python), optional<string>("print(1)"));
  EXPECT_EQ(finish_answer("print(1)\n", AnswerKind::python), nullopt);
  EXPECT_EQ(finish_answer("s = 1  # ```\n```", AnswerKind::python),
            optional<string>("s = 1  # ```"));
  EXPECT_TRUE(finisher_done("x = 1\n```", AnswerKind::python));
  EXPECT_FALSE(finisher_done("x = 1\n``", AnswerKind::python));
}

// The vote of the independent layout (and of eval's self-consistency, with math equivalence):
// the index of the winning class's first answer; blank and missing answers do not vote.
TEST(MajorityAnswer, LargestClassFirstSeenOnTies) {
  auto same = [](const std::string& a, const std::string& b) { return a == b; };
  using A = std::optional<std::string>;
  EXPECT_EQ(majority_answer({A("3"), A("4"), A("4")}, same), 1);
  EXPECT_EQ(majority_answer({A("3"), A("4"), A("4"), A("3")}, same), 0);  // tie: seen first
  EXPECT_EQ(majority_answer({A(), A(" "), A("5")}, same), 2);
  EXPECT_EQ(majority_answer({A(), A("\n")}, same), -1);
  EXPECT_EQ(majority_answer({}, same), -1);
  auto digits = [](const std::string& a, const std::string& b) { return a.back() == b.back(); };
  EXPECT_EQ(majority_answer({A("x1"), A("y2"), A("z2")}, digits), 1);
}

}  // namespace
}  // namespace hogwild
