// Unit tests of the chat-template interpreter pieces, with hand-computed expected outputs (worked
// out from the Python/jinja2 rules each comment names).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "chat/chat_template.h"
#include "chat/lexer.h"
#include "chat/strings.h"
#include "chat/ustr.h"
#include "chat/value.h"
#include "core/error.h"

namespace hogwild::chat {
namespace {

std::string render(const std::string& t,
                   const nlohmann::ordered_json& ctx = nlohmann::ordered_json::object(),
                   Limits limits = {}) {
  return ChatTemplate::from_string(t, {}, limits)
      .render_context(ctx.is_null() ? nlohmann::ordered_json::object() : ctx);
}

std::string error_of(const std::string& t,
                     const nlohmann::ordered_json& ctx = nlohmann::ordered_json::object(),
                     Limits limits = {}) {
  try {
    render(t, ctx, limits);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ChatValue, FloatReprLikeCPython) {
  EXPECT_EQ(float_repr(1.0), "1.0");
  EXPECT_EQ(float_repr(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(float_repr(1e16), "1e+16");
  EXPECT_EQ(float_repr(1234567890123456.0), "1234567890123456.0");
  EXPECT_EQ(float_repr(0.0001), "0.0001");
  EXPECT_EQ(float_repr(0.00001), "1e-05");
  EXPECT_EQ(float_repr(-2.5e-7), "-2.5e-07");
  EXPECT_EQ(float_repr(-0.0), "-0.0");
  EXPECT_EQ(float_repr(1.5e300), "1.5e+300");
}

TEST(ChatValue, StrAndReprLikePython) {
  Value v =
      from_json(nlohmann::ordered_json::parse(R"({"b": [1, 2.0, null, true, "it's"], "a": "x"})"));
  EXPECT_EQ(to_str(v), R"({'b': [1, 2.0, None, True, "it's"], 'a': 'x'})");
  EXPECT_EQ(to_repr(Value("a\nb\\")), R"('a\nb\\')");
  EXPECT_EQ(to_repr(Value(List{Value(1)}, true)), "(1,)");
  EXPECT_EQ(to_str(Value(Undefined{"x"})), "");
}

TEST(ChatValue, JsonDumpsLikeTransformersTojson) {
  Value v = from_json(nlohmann::ordered_json::parse(R"({"z": "é\n\"", "a": [1, {}], "e": []})"));
  JsonStyle compact;
  EXPECT_EQ(to_json(v, compact), R"({"z": "é\n\"", "a": [1, {}], "e": []})");
  JsonStyle pretty;
  pretty.indent = 2;
  EXPECT_EQ(to_json(v, pretty),
            "{\n  \"z\": \"é\\n\\\"\",\n  \"a\": [\n    1,\n    {}\n  ],\n  \"e\": []\n}");
  JsonStyle ascii;
  ascii.ensure_ascii = true;
  EXPECT_EQ(to_json(Value("é😀"), ascii), R"("\u00e9\ud83d\ude00")");
}

TEST(ChatValue, EqualityAndOrderLikePython) {
  EXPECT_TRUE(equals(Value(1), Value(1.0)));
  EXPECT_TRUE(equals(Value(true), Value(1)));
  EXPECT_FALSE(equals(Value("1"), Value(1)));
  EXPECT_TRUE(less(Value("B"), Value("a")));  // code point order
  EXPECT_THROW(less(Value("a"), Value(1)), Error);
}

TEST(ChatStrings, PythonStringAlgorithms) {
  EXPECT_EQ(py_strip("\n\n x \n", std::nullopt, true, true), "x");
  EXPECT_EQ(py_strip("xyaxy", std::string("xy"), true, false), "axy");
  using V = std::vector<std::string>;
  EXPECT_EQ(py_split_sep("a,,b", ",", -1, false), (V{"a", "", "b"}));
  EXPECT_EQ(py_split_sep("a,b,c", ",", 1, true), (V{"a,b", "c"}));
  EXPECT_EQ(py_split_ws("  a \t b  ", -1, false), (V{"a", "b"}));
  EXPECT_EQ(py_split_ws("  a b c ", 1, false), (V{"a", "b c"}));
  EXPECT_EQ(py_splitlines("a\r\nb\n\nc\n"), (V{"a", "b", "", "c"}));
  EXPECT_EQ(py_title("hello wORLD-x 3rd"), "Hello World-X 3Rd");
  EXPECT_EQ(py_replace("abc", "", "-", -1, 1000), "-a-b-c-");
  EXPECT_EQ(utf8_length("héllo"), 5u);
}

TEST(ChatLexer, WhitespaceControlAsTransformersRenders) {
  // trim_blocks eats the newline after %}; lstrip_blocks the indent before {%.
  EXPECT_EQ(render("{% if true %}\n  A\n  {% endif %}\nB"), "  A\nB");
  // `-` strips all whitespace on its side, newlines included.
  EXPECT_EQ(render("a \n {%- if true -%} \n b {%- endif %}"), "ab");
  // {{ }} is not a block: no lstrip, no trim.
  EXPECT_EQ(render("  {{ 1 }}\n"),
            "  1");  // (the final newline is dropped: keep_trailing_newline=False)
  EXPECT_EQ(render("x{# comment #}\ny"), "xy");
  // `+%}` keeps the newline trim_blocks would eat.
  EXPECT_EQ(render("{%+ if true %}\nA{% endif +%}\nB"), "A\nB");
}

TEST(ChatLexer, TokensCarryLineAndColumn) {
  auto toks = lex("ab\n  {{ x }}");
  ASSERT_GE(toks.size(), 3u);
  EXPECT_EQ(toks[1].type, Token::Type::VarBegin);
  EXPECT_EQ(toks[1].line, 2);
  EXPECT_EQ(toks[1].col, 3);
  EXPECT_EQ(toks[2].text, "x");
}

TEST(ChatExpr, OperatorsAndPrecedence) {
  EXPECT_EQ(render("{{ 1 + 2 * 3 ** 2 }}"), "19");
  EXPECT_EQ(render("{{ -7 // 2 }} {{ -7 % 3 }} {{ 7.5 // 2 }}"), "-4 2 3.0");
  EXPECT_EQ(render("{{ messages|length - 1 }}", {{"messages", {1, 2, 3}}}),
            "2");                                                          // filter binds first
  EXPECT_EQ(render("{{ not x is defined }}"), "True");                     // not (x is defined)
  EXPECT_EQ(render("{{ 'a' ~ 2 * 3 }} {{ 'x' + 'y' ~ 'z' }}"), "a6 xyz");  // + < ~ < *
  EXPECT_EQ(render("{{ 1 if 0 else 2 if 0 else 3 }}"), "3");
  EXPECT_EQ(render("{{ [1, 2, 3][::-1] }} {{ 'héllo'[::-2] }}"), "[3, 2, 1] olh");
}

TEST(ChatExpr, EscapesRepeatsAndStrMethodsAsPython) {
  // Python: '\101' is octal 65 ('A'), '\U0001F600' one code point.
  EXPECT_EQ(render(R"({{ '\101\U0001F600' }})"), "A\xF0\x9F\x98\x80");
  EXPECT_EQ(render("{{ [1] * 2 }} {{ 3 * 'ab' }} {{ 'ab' * -1 }}|"), "[1, 1] ababab |");
  EXPECT_EQ(render("{{ -7.5 // 2 }} {{ -7.5 % 2 }}"), "-4.0 0.5");
  EXPECT_EQ(render("{{ 'ab'.islower() }}{{ 'aB'.islower() }}{{ '12'.islower() }}"),
            "TrueFalseFalse");
  EXPECT_EQ(render("{{ 'aXbX'.index('X') }} {{ 'ab'.rfind('z') }}"), "1 -1");
  // Filters of a set block run left to right: trim, then upper.
  EXPECT_EQ(render("{% set x | trim | upper %}  ab  {% endset %}[{{ x }}]"), "[AB]");
  EXPECT_NE(error_of("{{ 'abc'.index('z') }}").find("substring not found."), std::string::npos);
  EXPECT_NE(error_of("{{ 4611686018427387904 * 2 }}").find("integer overflow."), std::string::npos);
  EXPECT_NE(error_of("{{ 0.0 ** -1 }}").find("0.0 cannot be raised to a negative power."),
            std::string::npos);
  EXPECT_NE(error_of("{{ 'a' - 1 }}").find("unsupported operand type(s) for -: 'str' and 'int'."),
            std::string::npos);
}

TEST(ChatStmt, LoopsScopesAndMacros) {
  EXPECT_EQ(render("{% for a, b in [[1, 2], [3, 4]] %}{{ a * b }}{% if not loop.last %},{% endif "
                   "%}{% endfor %}"),
            "2,12");
  // set inside a for body stays in that iteration; a namespace carries values out.
  EXPECT_EQ(render("{% set n = 1 %}{% set ns = namespace(n=1) %}{% for i in [5] %}{% set n = i %}"
                   "{% set ns.n = i %}{% endfor %}{{ n }}{{ ns.n }}"),
            "15");
  EXPECT_EQ(
      render("{% macro m(a, b=a + 1) %}{{ a }}{{ b }}{% endmacro %}{{ m(1) }}{{ m(1, b=5) }}"),
      "1215");
  EXPECT_EQ(
      render("{% for m in msgs if m.role != 'system' %}{{ loop.index }}{{ m.role[0] }}{% endfor %}",
             {{"msgs", {{{"role", "system"}}, {{"role", "user"}}, {{"role", "assistant"}}}}}),
      "1u2a");
}

TEST(ChatTemplateApi, RenderUsesSpecialTokensAndKwargs) {
  nlohmann::ordered_json cfg = {{"bos_token", {{"content", "<s>"}, {"lstrip", false}}},
                                {"eos_token", "</s>"},
                                {"unk_token", nullptr}};
  auto t = ChatTemplate::from_string(
      "{{ bos_token }}{{ unk_token is defined }}{{ tools is none }}{% for m in messages %}[{{ "
      "m.content }}]{% endfor %}"
      "{% if add_generation_prompt %}{{ eos_token }}{% endif %}{{ extra }}",
      SpecialTokens::from_tokenizer_config(cfg));
  nlohmann::ordered_json msgs = {{{"role", "user"}, {"content", "hi"}}};
  EXPECT_EQ(t.render(msgs, true, {{"extra", 7}}), "<s>FalseTrue[hi]</s>7");
  EXPECT_EQ(t.render(msgs, false), "<s>FalseTrue[hi]");
  EXPECT_THROW(t.render(nlohmann::ordered_json::object(), true), Error);  // messages not a list
}

TEST(ChatTemplateApi, LoadPrefersChatTemplateJinjaAndNamedTemplates) {
  auto dir = std::filesystem::temp_directory_path() / "hogwild_chat_load_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  EXPECT_THROW(ChatTemplate::load(dir), Error);  // no template anywhere
  {
    std::ofstream f(dir / "tokenizer_config.json");
    f << R"({"eos_token": "E", "chat_template": [{"name": "default", "template": "D{{ eos_token }}"},
            {"name": "tool_use", "template": "T"}]})";
  }
  EXPECT_EQ(ChatTemplate::load(dir).render(nlohmann::ordered_json::array(), false), "DE");
  EXPECT_EQ(ChatTemplate::load(dir, "tool_use").render(nlohmann::ordered_json::array(), false),
            "T");
  EXPECT_THROW(ChatTemplate::load(dir, "nope"), Error);
  {
    std::ofstream f(dir / "chat_template.jinja");
    f << "J{{ eos_token }}\n";
  }
  EXPECT_EQ(ChatTemplate::load(dir).render(nlohmann::ordered_json::array(), false), "JE");
  {
    std::ofstream f(dir / "tokenizer_config.json");
    f << "{not json";
  }
  EXPECT_THROW(ChatTemplate::load(dir), Error);
  std::filesystem::remove_all(dir);
}

TEST(ChatErrors, MessagesNameLineAndColumn) {
  EXPECT_EQ(error_of("ab\n{% if x %}"),
            "chat template syntax error at line 2, column 11: unexpected end of template: missing "
            "'{% endif %}'.");
  EXPECT_EQ(error_of("{{ x.y.z }}"), "chat template error at line 1, column 5: 'x' is undefined.");
  EXPECT_EQ(error_of("\n  {{ raise_exception('bad role') }}"),
            "chat template raised an exception at line 2, column 21: bad role");
  EXPECT_NE(error_of("{{ 'a' + 1 }}").find("can only concatenate str"), std::string::npos);
  EXPECT_NE(error_of("{% include 'x' %}").find("unsupported statement 'include'"),
            std::string::npos);
  EXPECT_NE(error_of("{{ 'unterminated }}").find("unterminated string"), std::string::npos);
  EXPECT_NE(error_of("{{ (((((1 }}").find("line 1"), std::string::npos);
  EXPECT_NE(error_of("{{ x[] }}").find("expected an index or a slice"),
            std::string::npos);  // fuzz find
}

TEST(ChatErrors, SelfReferenceAndDeepNestingAreBounded) {
  // Python prints a namespace it is already inside as {...} (jinja2 3.1.6 gives the same text).
  EXPECT_EQ(render("{% set ns = namespace(a=1) %}{% set ns.b = ns %}{{ ns }}"),
            "<Namespace {'a': 1, 'b': <Namespace {...}>}>");
  EXPECT_NE(
      error_of("{% set ns = namespace(x=[]) %}{% for i in range(2000) %}{% set ns.x = [ns.x] %}"
               "{% endfor %}{{ ns.x }}")
          .find("nested deeper than"),
      std::string::npos);
}

TEST(ChatErrors, LimitsStopRunawayTemplates) {
  Limits small;
  small.max_steps = 10000;
  small.max_bytes = 1 << 16;
  small.max_call_depth = 20;
  small.max_items = 50000;
  EXPECT_NE(error_of("{% for i in range(100000) %}{% endfor %}", {}, small).find("item limit"),
            std::string::npos);
  EXPECT_NE(error_of("{% for i in range(5000) %}{% for j in range(5000) %}{% endfor %}{% endfor %}",
                     {}, small)
                .find("steps"),
            std::string::npos);
  EXPECT_NE(error_of("{{ 'x' * 100000000 }}", {}, small).find("byte limit"), std::string::npos);
  EXPECT_NE(
      error_of("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", {}, small).find("nested deeper"),
      std::string::npos);
  EXPECT_NE(error_of("{{ " + std::string(300, '(') + "1" + std::string(300, ')') + " }}")
                .find("nested too deeply"),
            std::string::npos);
  EXPECT_NE(error_of("{{ 9223372036854775807 + 1 }}").find("overflow"), std::string::npos);
}

}  // namespace
}  // namespace hogwild::chat
