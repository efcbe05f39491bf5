#include "server/reasoning.h"

#include <fmt/format.h>

#include "core/error.h"
#include "hogwild/formatting.h"

namespace hogwild::server {

namespace {

constexpr std::string_view kSpace = " \t\r\n";

// The length of the longest end of `s` that is a proper beginning of `tag` (0 when none).
size_t partial_tag_at_end(std::string_view s, std::string_view tag) {
  for (size_t k = std::min(tag.size() - 1, s.size()); k > 0; --k)
    if (s.substr(s.size() - k) == tag.substr(0, k)) return k;
  return 0;
}

// True when `prompt` ends with `tag` followed by whitespace only.
bool ends_with_tag(std::string_view prompt, std::string_view tag) {
  const size_t last = prompt.find_last_not_of(kSpace);
  if (last == std::string_view::npos || last + 1 < tag.size()) return false;
  return prompt.substr(last + 1 - tag.size(), tag.size()) == tag;
}

}  // namespace

std::string_view reasoning_parser_name(ReasoningParser p) {
  switch (p) {
    case ReasoningParser::qwen3:
      return "qwen3";
    case ReasoningParser::deepseek_r1:
      return "deepseek_r1";
    case ReasoningParser::none:
      break;
  }
  return "none";
}

ReasoningParser parse_reasoning_parser(std::string_view name) {
  for (ReasoningParser p :
       {ReasoningParser::none, ReasoningParser::qwen3, ReasoningParser::deepseek_r1})
    if (name == reasoning_parser_name(p)) return p;
  throw Error(fmt::format("unknown reasoning parser '{}'; use qwen3, deepseek_r1 or none", name));
}

ReasoningParser default_reasoning_parser(std::string_view chat_template) {
  const std::string family = detect_formatting_family(chat_template);
  if (family == "qwen3") return ReasoningParser::qwen3;
  if (family == "deepseek-r1" || family == "qwq") return ReasoningParser::deepseek_r1;
  return ReasoningParser::none;
}

ThinkStart think_start(std::string_view prompt) {
  if (ends_with_tag(prompt, kThinkStart)) return ThinkStart::open;
  if (ends_with_tag(prompt, kThinkEnd)) return ThinkStart::closed;
  return ThinkStart::parser;
}

ReasoningSplitter::ReasoningSplitter(ReasoningParser p, ThinkStart s) {
  if (p == ReasoningParser::none || s == ThinkStart::closed) return;  // all content
  state_ = State::opening;
  opening_falls_to_reasoning_ = s == ThinkStart::open || p == ReasoningParser::deepseek_r1;
}

void ReasoningSplitter::to_reasoning(Delta& d) {
  state_ = State::reasoning;
  thought_ = true;
  const size_t end = held_.find(kThinkEnd);
  if (end != std::string::npos) {
    d.reasoning += held_.substr(0, end);
    d.content += held_.substr(end + kThinkEnd.size());
    held_.clear();
    state_ = State::content;
    return;
  }
  const size_t keep = partial_tag_at_end(held_, kThinkEnd);
  d.reasoning += held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
}

ReasoningSplitter::Delta ReasoningSplitter::push(std::string_view text) {
  Delta d;
  if (state_ == State::content) {
    d.content = text;
    return d;
  }
  held_.append(text);
  if (state_ == State::reasoning) {
    to_reasoning(d);
    return d;
  }
  // Opening: leading whitespace, then <think> or not.
  const size_t first = held_.find_first_not_of(kSpace);
  if (first == std::string::npos) return d;  // only whitespace so far
  const std::string_view rest = std::string_view(held_).substr(first);
  if (rest.substr(0, kThinkStart.size()) == kThinkStart) {
    held_.erase(0, first + kThinkStart.size());
    to_reasoning(d);
  } else if (kThinkStart.substr(0, rest.size()) == rest) {
    // may still become <think>: hold it
  } else if (opening_falls_to_reasoning_) {
    to_reasoning(d);
  } else {
    state_ = State::content;
    d.content.swap(held_);
  }
  return d;
}

ReasoningSplitter::Delta ReasoningSplitter::flush() {
  Delta d;
  if (state_ == State::reasoning || (state_ == State::opening && opening_falls_to_reasoning_)) {
    thought_ = true;
    d.reasoning.swap(held_);
  } else {
    d.content.swap(held_);
  }
  state_ = State::content;
  return d;
}

}  // namespace hogwild::server
