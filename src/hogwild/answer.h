// Answer extraction (docs/ARCHITECTURE.md §4: "the rightmost \boxed{…} with balanced braces").
//
// Math: `\boxed{...}` (also `\fbox{...}`), braces counted with LaTeX escapes: `\{` and `\}` are
// literal braces and do not open/close a group (a backslash always takes the next byte with it).
// The space form `\boxed 5` (one argument up to the next whitespace or `$`) is accepted too.
// The rightmost *complete* box wins; an unclosed box (`\boxed{1` at the end) is no answer, so
// `\boxed{1} ... \boxed{2` gives "1". The answer is the box content with surrounding whitespace
// trimmed: `\boxed{\frac{1}{2}}` → `\frac{1}{2}`; `\boxed{}` → "" (an answer, empty).
//
// Code: the last *closed* fenced block whose info string is python / py / python3 (```python ...
// ```), opening fence at a line start; the content is the lines between the fences without the
// final newline.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hogwild/formatting.h"

namespace hogwild {

/// Content of the rightmost complete \boxed{...} / \fbox{...} / `\boxed x` in text; nullopt if
/// none.
std::optional<std::string> extract_boxed(std::string_view text);

/// Content of the last closed ```python block in text; nullopt if none.
std::optional<std::string> extract_python_block(std::string_view text);

/// extract_boxed or extract_python_block by kind.
std::optional<std::string> extract_answer(std::string_view text, AnswerKind kind);

/// The final answer of a finished step, honouring AnswerFormat::marker (only text after the last
/// occurrence of the marker is searched when the marker is non-empty); nullopt if the step holds
/// none. The run stops when any worker's finished step has one (docs/ARCHITECTURE.md §4).
std::optional<std::string> step_answer(std::string_view step_text, const AnswerFormat& format);

/// true when step_answer() finds an answer.
bool has_final_answer(std::string_view step_text, const AnswerFormat& format);

/// Finisher: `continuation` is the greedy text decoded after Formatting::finisher.suffix, which
/// already opened the answer ("\boxed{" / "```python\n"). Returns the answer up to the balancing
/// "}" (boxed, escapes as above, trimmed) or up to the closing fence line "```" (python, without
/// the final newline); nullopt when the continuation stops before that (answer cut off).
std::optional<std::string> finish_answer(std::string_view continuation, AnswerKind kind);

/// Majority vote (self-consistency): the answers fall into classes by `same` (compared with each
/// class's first answer), in order; the largest class wins and a tie goes to the class seen first.
/// Missing or blank answers do not vote. Returns the index of the winning class's first answer,
/// or -1 when no answer votes.
int majority_answer(const std::vector<std::optional<std::string>>& answers,
                    const std::function<bool(const std::string&, const std::string&)>& same);

/// true once `continuation` contains the end of the answer (finish_answer would succeed): the
/// finisher can stop decoding early.
bool finisher_done(std::string_view continuation, AnswerKind kind);

}  // namespace hogwild
