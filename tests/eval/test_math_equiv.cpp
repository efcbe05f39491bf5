// Math answer equivalence on hand-made pairs (math_equiv.h): equivalent forms, different answers,
// and the traps of popular graders (1/2004! vs 1/2006!, an answer x100, the word "and").
#include <gtest/gtest.h>

#include "eval/math_equiv.h"

namespace hogwild::eval {
namespace {

struct Pair {
  const char* candidate;
  const char* gold;
  bool equal;
};

// Each row was written by hand; `equal` is what a careful human grader says.
const Pair kPairs[] = {
    // integers, signs, decimals
    {"18", "18", true},
    {"18.0", "18", true},
    {"018", "18", true},
    {"-5", "-5", true},
    {"- 5", "-5", true},
    {"−5", "-5", true},
    {"5", "-5", false},
    {"17", "18", false},
    {"0.5", "\\frac{1}{2}", true},
    {".5", "0.5", true},
    {"0.50", "\\frac12", true},
    {"0.333", "\\frac{1}{3}", false},
    {"0.3333333333", "\\frac{1}{3}", false},
    {"1.25", "\\frac{5}{4}", true},
    {"2.5", "\\frac{5}{2}", true},
    {"3.14", "\\pi", false},
    {"3.14159", "3.14159", true},
    {".35625", "\\frac{57}{160}", true},
    {"0.0000672", ".0000672", true},
    {"6.72 \\times 10^{-5}", ".0000672", true},
    {"6.72\\cdot10^{-5}", "0.0000672", true},
    {"1e3", "1000", false},  // "1e3" is 1*e*3 with a variable e, not scientific notation
    // fractions
    {"\\frac{1}{2}", "\\dfrac{1}{2}", true},
    {"\\tfrac{1}{2}", "\\frac{1}{2}", true},
    {"1/2", "\\frac{1}{2}", true},
    {"\\frac{2}{4}", "\\frac{1}{2}", true},
    {"\\frac 59", "\\frac{5}{9}", true},
    {"\\frac59", "\\frac{5}{9}", true},
    {"\\frac{9}{5}", "\\frac{5}{9}", false},
    {"\\dfrac{17}{50}", "0.34", true},
    {"-\\frac{30}{17}", "\\frac{-30}{17}", true},
    {"\\frac{-30}{17}", "-\\frac{30}{17}", true},
    {"\\frac{30}{17}", "-\\frac{30}{17}", false},
    {"\\frac{639}{40}", "15.975", true},
    {"\\frac{3}{56}", "\\frac{6}{112}", true},
    {"137 \\frac{1}{2}", "137.5", false},  // mixed numbers are not read (137 * 1/2)
    {"\\left(\\frac{1}{2}\\right)", "\\frac{1}{2}", true},
    // roots
    {"\\sqrt{2}", "\\sqrt2", true},
    {"2\\sqrt{3}", "\\sqrt{12}", true},
    {"\\frac{\\sqrt{3}}{2}", "\\frac{1}{2}\\sqrt{3}", true},
    {"\\frac{\\sqrt{21}}{5}", "\\sqrt{\\frac{21}{25}}", true},
    {"\\sqrt{51}", "\\sqrt{50}", false},
    {"\\sqrt{66}", "66^{1/2}", true},
    {"\\sqrt[3]{8}", "2", true},
    {"\\sqrt[3]{-8}", "-2", true},
    {"\\sqrt{4/9}", "\\frac{2}{3}", true},
    {"1.4142135623", "\\sqrt{2}", false},
    {"\\sqrt{2}/2", "\\frac{1}{\\sqrt{2}}", true},
    {"\\frac{\\sqrt{2}}{2}", "\\frac{\\sqrt{3}}{2}", false},
    {"6 \\sqrt{2}-2", "-2+6\\sqrt{2}", true},
    {"6\\sqrt{2}+2", "6 \\sqrt{2}-2", false},
    // pi
    {"288 \\pi", "288\\pi", true},
    {"288\\pi", "\\pi \\cdot 288", true},
    {"288", "288\\pi", false},
    {"\\frac{\\pi}{4}", "\\frac{1}{4}\\pi", true},
    {"\\pi/4", "\\frac{\\pi}{4}", true},
    {"\\frac{\\pi}{3}", "\\frac{\\pi}{4}", false},
    {"2\\pi r", "2 r \\pi", true},
    // powers, factorials, binomials
    {"2^{10}", "1024", true},
    {"2^10", "1024", true},
    {"2^{-1}", "\\frac{1}{2}", true},
    {"5!", "120", true},
    {"\\frac{1}{2004!}", "\\frac{1}{2004!}", true},
    {"\\frac{1}{2004!}", "\\frac{1}{2006!}", false},
    {"1/2006!", "\\frac{1}{2004!}", false},
    {"\\frac{100!}{2^{50}}", "100!/2^{50}", true},
    {"\\frac{100!}{2^{50}}", "\\frac{100!}{2^{49}}", false},
    {"\\binom{5}{2}", "10", true},
    {"\\dbinom{6}{3}", "20", true},
    {"2^{2024}", "2^{2024}", true},
    {"2^{2024}", "2^{2023}", false},
    {"10^{100}+1", "10^{100}", false},
    // an answer x100 is not the answer; percent and degree signs are units
    {"50", "0.5", false},
    {"0.5", "50", false},
    {"50\\%", "50", true},
    {"50%", "50\\%", true},
    {"0.5", "50\\%", false},
    {"5000", "50", false},
    {"30^\\circ", "30", true},
    {"30^{\\circ}", "30", true},
    {"30°", "30", true},
    {"30", "\\frac{\\pi}{6}", false},
    // thousands separators and money
    {"1,000", "1000", true},
    {"1{,}000", "1000", true},
    {"1\\,000", "1000", true},
    {"1,234,567", "1234567", true},
    {"\\$18", "18", true},
    {"\\$18.00", "18", true},
    {"18 dollars", "18", true},
    {"\\$1,000", "1000", true},
    {"1,000", "100", false},
    // units and \text
    {"10", "10\\text{ inches}", true},
    {"10 \\text{inches}", "10", true},
    {"10\\mbox{ cm}", "10", true},
    {"10 cm", "10", true},
    {"12 \\text{ cm}^2", "12", true},
    {"11", "10\\text{ inches}", false},
    {"19.3 W", "19.3", true},
    {"2.0 \\times 10^{9} Hz", "2.0 \\times 10^{9}", true},
    {"17.51 \\mathrm{MeV}", "17.51", true},
    // text answers
    {"\\text{Evelyn}", "\\text{Evelyn}", true},
    {"Evelyn", "\\text{Evelyn}", true},
    {"evelyn", "\\text{Evelyn}", true},
    {"\\text{Evelyn}.", "\\text{Evelyn}", true},
    {"\\text{Diana}", "\\text{Evelyn}", false},
    {"\\text{odd}", "\\text{odd}", true},
    {"\\text{even}", "\\text{odd}", false},
    {"\\text{neither}", "\\text{neither}", true},
    {"Monday", "\\text{Monday}", true},
    // the word "and" is kept: a list of two, not 34
    {"3 and 4", "3, 4", true},
    {"34", "3 and 4", false},
    {"3 \\text{ and } 4", "4, 3", true},
    {"3 and 5", "3 and 4", false},
    // multiple choice
    {"C", "\\text{(C)}", true},
    {"(C)", "C", true},
    {"\\text{(C)}", "(C)", true},
    {"(B)", "(C)", false},
    {"(C) 12", "C", true},
    {"D", "C", false},
    // lists, tuples, sets, intervals
    {"1, -2", "-2, 1", true},
    {"1, 2", "1, 2, 3", false},
    {"(6,31,-1)", "(6, 31, -1)", true},
    {"(31,6,-1)", "(6,31,-1)", false},
    {"(1,2)", "(2,1)", false},
    {"\\{1, 2\\}", "\\{2, 1\\}", true},
    {"\\{1, 2\\}", "\\{1, 3\\}", false},
    {"(-\\sqrt{3}, \\sqrt{3})", "\\left(-\\sqrt{3}, \\sqrt{3}\\right)", true},
    {"[-\\sqrt{3}, \\sqrt{3})", "(-\\sqrt{3}, \\sqrt{3})", false},
    {"(0,9) \\cup (9,36)", "(0, 9) \\cup (9, 36)", true},
    {"(9,36) \\cup (0,9)", "(0,9) \\cup (9,36)", true},
    {"(0,9] \\cup (9,36)", "(0,9) \\cup (9,36)", false},
    {"(-\\infty, 3)", "(-\\infty,3)", true},
    {"(-\\infty, 3]", "(-\\infty,3)", false},
    {"[2, \\infty)", "[2,\\infty)", true},
    {"(1,1006),(3,331),(11,31)", "(3,331),(1,1006),(11,31)", true},
    {"(1,1006),(3,331)", "(1,1006),(3,331),(11,31)", false},
    {"3 \\pm 2\\sqrt{2}", "3+2\\sqrt{2}, 3-2\\sqrt{2}", true},
    {"3 - 2\\sqrt{2}, 3 + 2\\sqrt{2}", "3 \\pm 2 \\sqrt{2}", true},
    {"3 + 2\\sqrt{2}", "3 \\pm 2 \\sqrt{2}", false},
    {"\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "\\begin{pmatrix}1\\\\2\\end{pmatrix}", true},
    {"\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}",
     "\\begin{pmatrix} 1 & 2 \\\\ 3 & 5 \\end{pmatrix}", false},
    {"\\begin{pmatrix} 1/2 \\\\ 0.25 \\end{pmatrix}",
     "\\begin{pmatrix} \\frac12 \\\\ \\frac14 \\end{pmatrix}", true},
    // equations and relations
    {"x = 5", "5", true},
    {"5", "x=5", true},
    {"x = 6", "5", false},
    {"y = 2x + 3", "y = 3 + 2x", true},
    {"y = 2x + 3", "y = 2x - 3", false},
    {"2x + 3 = y", "y = 2x + 3", true},
    {"x + y = 4", "y = 4 - x", true},
    {"x < 3", "3 > x", true},
    {"x \\le 3", "x < 3", false},
    {"x \\leq 3", "x \\le 3", true},
    {"k = 21", "21", true},
    // expressions with variables (numeric identity)
    {"p - q", "p-q", true},
    {"-q + p", "p - q", true},
    {"q - p", "p - q", false},
    {"x^5 - x^4 + x^3 - x^2 + x - 1", "x^5-x^4+x^3-x^2+x-1", true},
    {"(x-1)(x^4 + x^2 + 1)", "x^5 - x^4 + x^3 - x^2 + x - 1", true},
    {"(x-1)(x+1)", "x^2 - 1", true},
    {"(x-1)^2", "x^2 - 1", false},
    {"\\frac{n(n+1)}{2}", "\\frac{n^2+n}{2}", true},
    {"\\frac{n(n-1)}{2}", "\\frac{n^2+n}{2}", false},
    {"6 - 5i", "6-5i", true},
    {"-5i + 6", "6 - 5i", true},
    {"6 + 5i", "6 - 5i", false},
    {"\\lfloor\\frac{2 n-1}{5}\\rfloor", "\\lfloor \\frac{2n-1}{5} \\rfloor", true},
    {"a^2 b", "b a^2", true},
    {"\\sin^2 x + \\cos^2 x", "1", true},
    {"\\ln(x^2)", "2\\ln x", true},
    {"\\log_2 8", "3", true},
    {"2\\log 2", "\\log 4", true},
    // physics-style formulas with subscripts and Greek letters
    {"\\frac{3 Z(Z-1) e^{2}}{20 \\pi \\varepsilon_{0} R}",
     "U_{c}=\\frac{3 Z(Z-1) e^{2}}{20 \\pi \\varepsilon_{0} R}", true},
    {"\\frac{3 Z^2 e^{2}}{20 \\pi \\varepsilon_{0} R}",
     "U_{c}=\\frac{3 Z(Z-1) e^{2}}{20 \\pi \\varepsilon_{0} R}", false},
    {"\\mu = \\frac{qcR}{3}", "\\mu=q c R / 3", true},
    {"\\frac{h}{\\sqrt{2 m e_{0} V_{0}}}", "\\frac{h}{\\sqrt{2 m e_0 V_0}}", true},
    {"\\frac{h}{\\sqrt{m e_{0} V_{0}}}", "\\frac{h}{\\sqrt{2 m e_{0} V_{0}}}", false},
    {"(n-2) 2^{n}+1", "n 2^n - 2^{n+1} + 1", true},
    {"x \\in [-2,7]", "[-2, 7]", true},
    {"x \\in [-2,7]", "(-2, 7]", false},
    {"$q_{\\mathrm{eff}}=C V_{0}$", "C V_0", true},
    {"$\\tau_{\\text {crit }}=9.36 \\cdot 10^{-7}$", "9.36 \\times 10^{-7}", true},
    {"$v=\\sqrt{2gh\\frac{\\Delta T}{T_{Air}}}$", "\\sqrt{\\frac{2 g h \\Delta T}{T_{Air}}}", true},
    // delimiters and boxes
    {"$18$", "18", true},
    {"\\(18\\)", "18", true},
    {"\\boxed{18}", "18", true},
    {"\\displaystyle \\frac{1}{2}", "\\frac12", true},
    // unreadable or empty candidates
    {"", "18", false},
    {"the answer is unclear", "18", false},
};

TEST(MathEquiv, HandMadePairs) {
  ASSERT_GE(std::size(kPairs), 150u);
  for (const Pair& p : kPairs) {
    EXPECT_EQ(math_equal(p.candidate, p.gold), p.equal)
        << "candidate: " << p.candidate << "\ngold: " << p.gold;
  }
}

TEST(MathEquiv, ParseStatusSeparatesUnreadableFromWrong) {
  ParseStatus s;
  EXPECT_FALSE(math_equal("17", "18", {}, &s));
  EXPECT_EQ(s, ParseStatus::ok);
  EXPECT_FALSE(math_equal("the answer is unclear", "18", {}, &s));
  EXPECT_EQ(s, ParseStatus::unparsed);
  EXPECT_FALSE(math_equal("  ", "18", {}, &s));
  EXPECT_EQ(s, ParseStatus::no_answer);
  EXPECT_TRUE(math_equal("\\text{Evelyn}", "Evelyn", {}, &s));
  EXPECT_EQ(s, ParseStatus::ok);
}

TEST(MathEquiv, LenientOptionsOnlyBehindFlags) {
  MathOptions lenient;
  lenient.rel_tolerance = 1e-3;
  EXPECT_FALSE(math_equal("0.3333", "\\frac{1}{3}"));
  EXPECT_TRUE(math_equal("0.3333", "\\frac{1}{3}", lenient));
  EXPECT_FALSE(math_equal("0.33", "\\frac{1}{3}", lenient));
  MathOptions percent;
  percent.percent_scaled = true;
  EXPECT_FALSE(math_equal("0.5", "50\\%"));
  EXPECT_TRUE(math_equal("0.5", "50\\%", percent));
  EXPECT_FALSE(math_equal("0.5", "50", percent));  // no percent sign: still different
}

TEST(MathEquiv, PhysicsAbsoluteTolerance) {
  // OlympiadBench physics: "error" is an absolute tolerance (17.51 MeV, error 1e-1).
  EXPECT_TRUE(parts_equal("17.45", {"17.51"}, false, {0.1}, {}));
  EXPECT_TRUE(parts_equal("17.6 MeV", {"17.51"}, false, {0.1}, {}));
  EXPECT_FALSE(parts_equal("17.7", {"17.51"}, false, {0.1}, {}));
  EXPECT_TRUE(parts_equal("2.05 \\times 10^{9}", {"$2.0 \\times 10^{9}$"}, false, {1e8}, {}));
  EXPECT_FALSE(parts_equal("2.2 \\times 10^{9}", {"$2.0 \\times 10^{9}$"}, false, {1e8}, {}));
  EXPECT_FALSE(parts_equal("17.52", {"17.51"}, false, {}, {}));  // no tolerance: exact
}

TEST(MathEquiv, OrderedPartsOfGsm8k5) {
  const std::vector<std::string> gold = {"18", "3", "70000", "540", "20"};
  ParseStatus s;
  EXPECT_TRUE(parts_equal("18; 3; 70000; 540; 20", gold, true, {}, {}, &s));
  EXPECT_TRUE(parts_equal("18; 3; 70,000; 540; 20", gold, true, {}, {}, &s));
  EXPECT_TRUE(parts_equal("18, 3, 70000, 540, 20", gold, true, {}, {}, &s));
  EXPECT_FALSE(parts_equal("3; 18; 70000; 540; 20", gold, true, {}, {}, &s));  // order matters
  EXPECT_FALSE(parts_equal("18; 3; 70000; 540; 21", gold, true, {}, {}, &s));  // one wrong
  EXPECT_EQ(s, ParseStatus::ok);
  EXPECT_FALSE(parts_equal("18; 3; 70000; 540", gold, true, {}, {}, &s));  // four answers
  EXPECT_EQ(s, ParseStatus::unparsed);
}

TEST(MathEquiv, UnorderedMultipleAnswers) {
  EXPECT_TRUE(parts_equal("2, 1", {"1", "2"}, false, {}, {}));
  EXPECT_FALSE(parts_equal("1", {"1", "2"}, false, {}, {}));
}

TEST(MathEquiv, DigitsOnlyQuirk) {
  MathOptions d;
  d.digits_only = true;
  EXPECT_TRUE(math_equal("\\frac{1}{2}", "12", d));  // the quirk: 1/2 "equals" 12
  EXPECT_FALSE(math_equal("0.5", "\\frac{1}{2}", d));
}

}  // namespace
}  // namespace hogwild::eval
