// Evaluation datasets (`hogwild eval --dataset`): the benchmarks of the paper by name, read from
// the datasets folder (each subfolder's SOURCE.md gives the file's origin and fields), or any JSONL
// file with a field mapping. See docs/EVAL.md for every name, file and field.
//
//   name                   file (under the datasets folder)               kind     gold
//   gsm8k                  gsm8k/test.jsonl (1319)                       math     "#### n" of
//   answer gsm8k5                 5 gsm8k questions per prompt, packed by seed  math     all 5
//   right math500                math500/test.jsonl (500)                      math     answer
//   aime2025               aime2025/aime25.jsonl (30)                    math     answer (int)
//   olympiadbench-math     olympiadbench/test.jsonl (675)                math     final_answer
//   (list) olympiadbench-physics  olympiadbench/English_Olympiad_Physics.json   physics
//   final_answer, error
//                          (open-ended, auto-scorable, no images: 583)
//   livecodebench          livecodebench/livecodebench_v5.jsonl (279)    code     sample tests in
//                                                                                 the statement
//   limo                   limo/limo.jsonl (user-supplied, 817)          math     answer
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace hogwild::eval {

/// What a problem's answer is and how it is scored (scoring.h).
enum class ProblemKind {
  math,     ///< a LaTeX / number answer in \boxed{}; exact equivalence (math_equiv.h)
  physics,  ///< as math, numbers within the gold's absolute tolerance (OlympiadBench "error")
  code,     ///< a Python program run against tests in a sandbox (code_tests.h, sandbox.h)
  /// an expression in \boxed{} that reaches the target from the given numbers under the Countdown
  /// rules (src/collab/countdown.h check_countdown); the gold is one known solution, any other
  /// one is right too
  countdown,
};

/// "math" / "physics" / "code" / "countdown".
const char* kind_name(ProblemKind k);

/// One stdin/stdout test (AtCoder style) or one call test (LeetCode style: `call` holds the
/// keyword arguments as "name = value, ..." and `method` the Solution method to call).
struct CodeTest {
  std::string input;   ///< stdin text, or the call's arguments
  std::string output;  ///< expected stdout, or the expected return value (a literal)
};

struct Problem {
  std::string id;    ///< unique within the dataset; names the transcript file
  std::string text;  ///< the problem as the model sees it ({problem} of the formatting)
  /// Gold answer parts. One part for most problems; several when every part must be given:
  /// gsm8k5 (in order) and OlympiadBench items with is_multiple_answer (any order).
  std::vector<std::string> gold;
  bool gold_ordered = false;  ///< several parts: the answer lists them in this order
  /// physics: absolute tolerance per gold part (OlympiadBench "error"); empty = exact.
  std::vector<double> tolerance;
  std::string unit;  ///< physics: the gold's unit as the dataset writes it ("" when none)
  /// code: tests found in the statement (the hidden tests are not available offline).
  std::vector<CodeTest> tests;
  std::string method;  ///< code, LeetCode style: the Solution method the tests call; "" = stdin
  std::vector<int64_t> numbers;  ///< countdown: the given numbers
  int64_t target = 0;            ///< countdown: the target
};

struct Dataset {
  std::string name;  ///< built-in name, or the JSONL path
  ProblemKind kind = ProblemKind::math;
  std::vector<Problem> problems;
  std::string note;  ///< shown in the summary (e.g. "public sample tests only")
};

/// Field mapping for a JSONL file given by path (`--question-field`, `--answer-field`,
/// `--id-field`). A file of `hogwild collab problems --task countdown` (every record has "task":
/// "countdown", "numbers" and "target") is a countdown dataset: answers are checked against the
/// numbers and the target, the answer field (a known solution) is shown as the gold. Otherwise the
/// gold is the answer field's value (string or number): after "#### " when it
/// holds one (GSM8k's convention), else the content of its last \boxed{} when it holds one, else
/// the whole value. A list value gives several gold parts (all required, any order).
struct FieldMap {
  std::string question = "question";
  std::string answer = "answer";
  std::string id;  ///< "" = the 1-based line number
};

struct DatasetOptions {
  std::string name_or_path;  ///< a built-in name (dataset_names()) or a .jsonl / .json path
  std::filesystem::path datasets_dir;  ///< the datasets folder (find_datasets_dir)
  FieldMap fields;
  uint64_t seed = 0;  ///< gsm8k5 packing
};

/// The built-in names in documentation order.
const std::vector<std::string>& dataset_names();

/// The datasets folder: `explicit_dir` when non-empty, else $HOGWILD_DATASETS when set, else the
/// first of `candidates` (e.g. <source>/../shared/datasets, ../shared/datasets) that exists.
/// Throws hogwild::Error naming what was tried when none exists (only a built-in name needs it).
std::filesystem::path find_datasets_dir(const std::string& explicit_dir,
                                        const std::vector<std::filesystem::path>& candidates);

/// Loads a dataset. Throws hogwild::Error: unknown name (listing the names), missing file (with
/// what to do, e.g. where LIMO's file goes), a malformed JSON line (file:line and the parser's
/// message), a record without the question or answer field (file:line, the fields it has, the
/// flag to pass).
Dataset load_dataset(const DatasetOptions& o);

/// GSM8k's gold: the text after the last "#### " with thousands separators removed ("1,000" ->
/// "1000"); nullopt when there is no "#### ".
std::optional<std::string> gsm8k_gold(const std::string& answer_field);

/// The gsm8k5 packing: the 1319 (or n) question indices shuffled by Fisher-Yates with
/// std::mt19937_64(seed) and cut into groups of 5 (a short last group is dropped). Portable: the
/// engine's draws are `next() % (i + 1)`, no std::shuffle (implementation-defined).
std::vector<std::vector<size_t>> gsm8k5_groups(size_t n, uint64_t seed);

/// The gsm8k5 prompt for five questions (numbered "Problem 1:" .. "Problem 5:", asking for the
/// five answers in one \boxed{} separated by semicolons).
std::string gsm8k5_text(const std::vector<std::string>& questions);

}  // namespace hogwild::eval
