// The formatting file: every text that shapes collaboration (docs/ARCHITECTURE.md §3, §4;
// docs/FORMATTING.md).
//
// A Formatting holds the rules prompt, the optional few-shot example, worker names, the step
// prefix, the step separator, the combined-layout headers/separators, the collaboration-check
// question and its period, the finisher suffix, forbidden token texts and the answer kind. It comes
// from a built-in default (selected by name, e.g. "qwen3-math") or from a user JSON file that names
// a built-in "base" and overrides any subset of its keys. The JSON keys are documented in
// docs/FORMATTING.md.
//
// Placeholders in templates: `{name}` where name is one of the placeholders a key documents (see
// docs/FORMATTING.md); any other brace text (e.g. `\boxed{answer}`) is kept literally.
//   {n_workers}     number of workers, e.g. "3"
//   {worker_names}  the active workers' names as an English list: "Alice, Bob and Carol"
//   {name_1}..{name_8}  the k-th worker's name (1-based)
//   {name}          the worker the text is for (step prefix, headers, collaboration check)
//   {step}          the worker's own 1-based step number (step prefix)
//   {rules} {example} {problem}  (chat.user / chat.system only)
//   {n_points}      Skeleton-of-Thought: the most outline points (sot.rules)
//   {point} {point_text}  Skeleton-of-Thought: a point's 1-based number and text (sot.point_prefix)
//
// Worker indices in this API are 0-based (worker 0 = "Alice" by default); step numbers are 1-based
// and count each worker's own steps.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace hogwild {

/// What a final answer looks like.
enum class AnswerKind {
  boxed,   ///< math: the rightmost `\boxed{...}` with balanced braces (answer.h)
  python,  ///< code: the last closed ```python fenced block (answer.h)
};

/// "boxed" / "python" (the JSON spelling).
std::string_view answer_kind_name(AnswerKind kind);

/// One chat message, before the model's chat template is applied (role: "system" | "user").
struct PromptMessage {
  std::string role;
  std::string content;
};

/// How the prompt is wrapped for the model family (JSON object "chat").
struct ChatFormat {
  /// true: render the messages with the model's own chat template (tokenizer_config.json
  /// "chat_template", add_generation_prompt=true); false: the prompt is the raw concatenation
  /// system + user + assistant_prefix (no template, no special tokens).
  bool use_template = true;
  /// Passed to the chat template as `enable_thinking` (Qwen3) when set; when `has_enable_thinking`
  /// is false the variable is not passed at all (JSON: null).
  bool has_enable_thinking = false;
  bool enable_thinking = false;
  /// System message template ({rules} {example} {problem} {n_workers} {worker_names} {name_k});
  /// empty → no system message.
  std::string system;
  /// User message template (same placeholders as system). Required, non-empty.
  std::string user;
  /// Text that opens the assistant's turn after the template's generation prompt, e.g. "<think>\n".
  /// complete_prompt() appends it unless the rendered template already ends with it (QwQ and
  /// DeepSeek-R1 templates already add "<think>\n"; Qwen3's with enable_thinking does not).
  std::string assistant_prefix;
};

/// Texts of the layouts (JSON object "layout"; docs/ARCHITECTURE.md §3). Combined layout view of
/// worker w:
///   [prompt + history_header + finished steps] [others_header]
///   [other_1 current step] [other_separator] ... [other_k current step]
///   [other_separator + own_header] [own current step]
/// Interleaved: [prompt + history_header + finished steps] [own current step].
/// Contiguous: [prompt + history_header] [others_header]
///   [other_1 whole output] [other_separator] ... [other_separator + own_header] [own whole
///   output].
struct LayoutTexts {
  std::string history_header;  ///< after the prompt, before the first finished step; may be ""
  std::string others_header;   ///< {name} = the viewing worker; before the others' current steps
  /// After each other worker's unfinished step ("this step continues in parallel").
  std::string other_separator;
  std::string own_header;  ///< {name} = the viewing worker; after the last other_separator
};

/// The collaboration check (paper's s1-like intervention; docs/ARCHITECTURE.md §4; JSON object
/// "collab_check").
struct CollabCheck {
  /// Period in generated tokens, all workers counted; 0 disables the check. Default 1024.
  int64_t every = 1024;
  /// Question placed right after the step prefix of the next step that starts ({name}); yes/no.
  std::string text;
};

/// The finisher (docs/ARCHITECTURE.md §4; JSON object "finisher").
struct FinisherText {
  /// Appended to the linearised text when the budget ends without an answer. For math it ends with
  /// an opened "\boxed{"; for code with an opened "```python\n" fence.
  std::string suffix;
  /// Greedy tokens decoded after the suffix at most (the answer is cut at the balancing "}" /
  /// closing fence, answer.h finish_answer()).
  int64_t max_tokens = 32;
};

/// Forbidden tokens during collaborative reasoning (docs/ARCHITECTURE.md §4; JSON object
/// "forbidden").
struct ForbiddenTokens {
  /// Forbid the model's EOS token ids (generation_config.json eos_token_id and tokenizer eos).
  bool eos = true;
  /// A vocabulary token is forbidden when its decoded text, with leading and trailing whitespace
  /// (space, \t, \n, \r) removed, equals one of these strings (e.g. "</think>", "<|im_end|>", "#").
  std::vector<std::string> texts;
};

/// Answer settings (JSON object "answer").
struct AnswerFormat {
  AnswerKind kind = AnswerKind::boxed;
  /// When non-empty, a finished step holds a final answer only if an answer appears *after* this
  /// text in it (e.g. "Final solution:" for code, where scratch code blocks are common).
  std::string marker;
};

/// Skeleton-of-Thought texts (JSON object "sot"; docs/FORMATTING.md; session.h "Skeleton-of-
/// Thought"): an outline by one worker, its points expanded in parallel, then the answer.
struct SkeletonTexts {
  /// Used as {rules} in the chat messages of a Skeleton-of-Thought run ({n_points}); no example.
  std::string rules;
  /// Opens the outline (the first worker's first step), e.g. "Outline:\n1.". The outline ends at
  /// the first step_separator in the text written after it, at EOS, or after outline_max_tokens.
  std::string outline_prefix;
  /// Opens the expansion of one point ({point} = its 1-based number, {point_text} = its text).
  /// An expansion ends at its first step end (steps.h) or EOS.
  std::string point_prefix;
  /// Opens the answer step, written after every expansion joined the history.
  std::string answer_prefix;
  int64_t outline_max_tokens = 256;  ///< generated tokens of the outline at most (>= 1)
};

/// The summary step of the KV budget's summarise-and-drop policy (JSON object "summary";
/// docs/ARCHITECTURE.md §11, hogwild/forgetting.h): when the shared history passes the budget, one
/// worker's next step opens with its step prefix followed by `prompt` and sums up the history;
/// once it is in the history, the steps it sums up are forgotten.
struct SummaryText {
  /// Written after the step prefix ({name} = the worker writing it); asks for the summary.
  std::string prompt;
  /// Generated tokens of a summary at most (>= 1): a summary that has not ended by then is closed
  /// with the step separator.
  int64_t max_tokens = 128;
};

/// A complete formatting. Build with builtin_formatting() / load_formatting() / parse_formatting();
/// all fields are validated there (non-empty names, separator, user template, ...).
struct Formatting {
  std::string name;  ///< e.g. "qwen3-math" or the user file's "name"
  ChatFormat chat;
  std::string rules;  ///< rules prompt for n_workers >= 2 ({n_workers} {worker_names} {name_k})
  std::string rules_single;  ///< rules for n_workers == 1 (the single-worker baseline)
  /// Optional few-shot example ({name_k} {worker_names} {n_workers}); may be "".
  std::string example;
  std::vector<std::string> worker_names;  ///< >= 1 distinct non-empty names; n_workers <= size()
  std::string step_prefix = "**{name} [{step}]:** ";  ///< {name} {step}
  std::string step_separator = "\n\n";                ///< ends a step (steps.h); non-empty
  /// Opens a note a person inserts into a running session's history ({name} = its author);
  /// the note then reads as a finished step (docs/ARCHITECTURE.md §4, "Notes").
  std::string note_prefix = "**Note from {name}:** ";
  LayoutTexts layout;
  CollabCheck collab_check;
  FinisherText finisher;
  ForbiddenTokens forbidden;
  AnswerFormat answer;
  SkeletonTexts sot;
  SummaryText summary;

  /// Throws hogwild::Error unless 1 <= n_workers <= worker_names.size().
  void check_workers(int n_workers) const;
  /// Worker w's name (0-based). Precondition: 0 <= w < worker_names.size().
  const std::string& worker_name(int w) const;
  /// The rules prompt for n_workers (rules_single when n_workers == 1), placeholders filled.
  std::string render_rules(int n_workers) const;
  /// The few-shot example with placeholders filled ("" when none, and for n_workers == 1: the
  /// example shows collaboration, so the single-worker baseline does not get it).
  std::string render_example(int n_workers) const;
  /// The chat messages (system if non-empty, then user) for the problem. skeleton_points > 0:
  /// the Skeleton-of-Thought prompt ({rules} = sot.rules for that many points, no example; the
  /// worker placeholders as for one worker; n_workers is not used).
  std::vector<PromptMessage> messages(std::string_view problem, int n_workers,
                                      int skeleton_points = 0) const;
  /// Prompt text when chat.use_template is false: system + user + assistant_prefix.
  std::string raw_prompt(std::string_view problem, int n_workers, int skeleton_points = 0) const;
  /// `rendered` (the chat template's output with add_generation_prompt) + chat.assistant_prefix,
  /// unless `rendered` already ends with assistant_prefix.
  std::string complete_prompt(std::string_view rendered) const;
  /// Step prefix of worker w's step number `step` (1-based), e.g. "**Alice [1]:** ".
  std::string render_step_prefix(int w, int step) const;
  /// Text that opens a new step: the step prefix, plus the collaboration-check question when
  /// `with_collab_check` (and collab_check.text is non-empty).
  std::string step_start(int w, int step, bool with_collab_check) const;
  /// Text that opens worker w's summary step number `step` (the KV budget's summarise-and-drop):
  /// the step prefix, then summary.prompt.
  std::string summary_start(int w, int step) const;
  /// The whole text of a note by `author` (docs/ARCHITECTURE.md §4, "Notes"): note_prefix with
  /// {name} = author, the note, then step_separator (unless the note already ends with it), so
  /// that it reads as a finished step.
  std::string note_text(std::string_view author, std::string_view note) const;
  /// sot.point_prefix for point `point` (1-based) whose outline text is `text`.
  std::string point_prefix(int point, std::string_view text) const;
  /// Layout texts with {name} = the viewing worker w.
  std::string others_header(int w) const;
  std::string own_header(int w) const;
  /// true when a vocabulary token whose decoded text is `token_text` is in forbidden.texts
  /// (compared after stripping leading/trailing whitespace). EOS is handled via forbidden.eos.
  bool is_forbidden_text(std::string_view token_text) const;
  /// The full JSON (every key in documentation order, no "base"); parse_formatting(to_json())
  /// round-trips. `hogwild run --print-format` prints to_json().dump(2).
  nlohmann::ordered_json to_json() const;
};

/// Names of the built-in formattings: "{family}-{variant}" for family in qwen3, qwq, deepseek-r1,
/// generic and variant in math, code; plus "plain" (inserts nothing: raw prompt "{problem}", no
/// prefixes, headers, checks or forbidden tokens — the degenerate single-worker test).
std::vector<std::string> builtin_formatting_names();

/// A built-in formatting. Throws hogwild::Error (listing the names) for an unknown name.
Formatting builtin_formatting(std::string_view name);

/// Parses a formatting JSON object. If it has "base" (a built-in name), keys given override the
/// base's (objects merged key by key, arrays and strings replaced); without "base" every key is
/// required. Unknown keys, missing keys, wrong types and invalid values throw hogwild::Error naming
/// the key path (e.g. "collab_check.every") and what to do. `origin` names the source in messages.
/// Keys starting with "//" are comments and ignored at any level.
Formatting parse_formatting(const nlohmann::ordered_json& j,
                            std::string_view origin = "formatting");
Formatting parse_formatting(const nlohmann::json& j, std::string_view origin = "formatting");

/// Reads and parses a formatting JSON file (parse_formatting). Throws hogwild::Error if it cannot
/// be read or is not valid JSON (with the line/column from the parser).
Formatting load_formatting(const std::filesystem::path& file);

/// A built-in name if `name_or_path` is one, else a file path (load_formatting).
Formatting resolve_formatting(std::string_view name_or_path);

/// The model family's formatting family from its chat template (tokenizer_config.json
/// "chat_template"): "qwen3" (uses enable_thinking), "deepseek-r1" (<｜Assistant｜>), "qwq"
/// (ChatML that opens <think>), else "generic".
std::string detect_formatting_family(std::string_view chat_template);

/// "{family}-{variant}" for family from detect_formatting_family and variant "math" / "code".
std::string default_formatting_name(std::string_view chat_template, AnswerKind kind);

/// The labels of a session's n workers in live views, transcripts and API responses: the
/// formatting's worker names; "sample k" (1-based) for independent workers (self-consistency),
/// who all write under the first name; "point k" for Skeleton-of-Thought's point writers;
/// "assistant" for the plain formatting's single worker. run, eval and serve label by this.
std::vector<std::string> worker_labels(const Formatting& f, int n_workers, bool independent,
                                       bool skeleton);

/// The file a model directory ships its own formatting in (the one it was trained with).
inline constexpr const char* kModelFormattingFile = "hogwild_format.json";

/// The formatting a command uses when --format is not given: the model directory's
/// hogwild_format.json when it has one, else default_formatting_name(chat_template, kind). The
/// result is a name or a path for resolve_formatting. Every command (run, eval, serve, collab)
/// takes its default from here.
std::string model_formatting_ref(const std::filesystem::path& model_dir,
                                 std::string_view chat_template, AnswerKind kind);

}  // namespace hogwild
