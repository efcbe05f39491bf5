// Reasoning output of chat completions (docs/SERVER.md "Reasoning output"): the text a model
// writes inside its thinking block (<think> ... </think>, as Qwen3, QwQ and DeepSeek-R1 write it)
// goes to `reasoning_content`, the text after it to `content`, as vLLM's OpenAI-compatible server
// does with `--reasoning-parser qwen3` / `deepseek_r1`. The split works on streamed text: a tag
// cut across token boundaries is held back until it completes or cannot, so no part of a tag
// ever reaches either field.
#pragma once

#include <string>
#include <string_view>

namespace hogwild::server {

/// How a model marks its thinking (the `--reasoning-parser` of `hogwild serve`).
enum class ReasoningParser {
  none,         // no split: the whole text is content
  qwen3,        // the output opens its thinking with <think> itself (Qwen3's enable_thinking);
                // an output that does not start with <think> is all content
  deepseek_r1,  // the template opens the thinking (DeepSeek-R1, QwQ): the output starts inside
                // it, with or without a <think> of its own; everything before </think> is
                // reasoning
};

inline constexpr std::string_view kThinkStart = "<think>";
inline constexpr std::string_view kThinkEnd = "</think>";

/// "none", "qwen3", "deepseek_r1": vLLM's names for the same conventions.
std::string_view reasoning_parser_name(ReasoningParser p);

/// The parser named `name` (a name of reasoning_parser_name). Throws hogwild::Error naming the
/// accepted names otherwise.
ReasoningParser parse_reasoning_parser(std::string_view name);

/// The parser of a model, from its chat template's formatting family (hogwild/formatting.h
/// detect_formatting_family): qwen3 -> qwen3; deepseek-r1 and qwq (templates that open <think>
/// in the generation prompt) -> deepseek_r1; generic -> none.
ReasoningParser default_reasoning_parser(std::string_view chat_template);

/// Where a generation starts, read from the end of its rendered prompt.
enum class ThinkStart {
  parser,  // the prompt says nothing: the parser's convention decides
  open,    // the prompt ends with <think> (and whitespace): the output starts inside thinking
  closed,  // the prompt ends with </think> (and whitespace), e.g. Qwen3 with enable_thinking
           // false: the thinking is over, the output is all content
};

/// The ThinkStart of a generation whose prompt is `prompt` (the chat template's output with the
/// generation prompt). Only the prompt's end counts, so a tag inside a user message does not.
ThinkStart think_start(std::string_view prompt);

/// Splits a chat completion's text, pushed in pieces as it streams, into reasoning and content.
/// Pushing the whole text at once and flushing gives the same split as any cutting of it into
/// pieces (stream == non-stream).
///
/// Rules (parser `p`, start `s`):
///  - p none, or s closed: all content.
///  - s open, or p deepseek_r1: the text starts inside thinking; a <think> at its start (after
///    whitespace) is dropped.
///  - p qwen3 (s parser): the text starts inside thinking only when it starts with <think> (after
///    whitespace; both dropped); else it is all content.
///  - Inside thinking, the text up to the first </think> is reasoning; the tag is dropped and
///    everything after it is content (later tags included, as text).
///  - A text that ends inside thinking has only reasoning (content "").
class ReasoningSplitter {
 public:
  struct Delta {
    std::string reasoning, content;
  };

  ReasoningSplitter(ReasoningParser p, ThinkStart s);
  /// Adds the next piece of text; returns what is now known to be reasoning or content (text
  /// that may be the beginning of a tag is held back).
  Delta push(std::string_view text);
  /// The generation ended: returns what was held back (a partial tag is plain text then).
  Delta flush();
  /// True once the text is known to have a thinking part (even an empty one): then the response
  /// carries `reasoning_content`; otherwise it is null, as with no parser.
  bool has_reasoning() const { return state_ == State::reasoning || thought_; }

 private:
  enum class State { opening, reasoning, content };
  void to_reasoning(Delta& d);

  State state_ = State::content;
  bool opening_falls_to_reasoning_ = false;  // deepseek_r1: no <think> still means thinking
  bool thought_ = false;                     // a thinking part was entered
  std::string held_;
};

}  // namespace hogwild::server
