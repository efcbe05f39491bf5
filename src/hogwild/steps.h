// Step-end detection (docs/ARCHITECTURE.md §4).
//
// A worker's step ends when its newest token completes the step separator (default "\n\n") and the
// step text before that separator ends a sentence, outside any unclosed code fence or display-math
// block. All functions work on raw UTF-8 *bytes* (concatenated token bytes, not a streaming decode
// that holds back partial characters), so a multi-byte character split across tokens is fine.
//
// Rule, precisely (find_step_end):
//  1. The newest token is the last `newest_len` bytes of `step_text`. A separator occurrence counts
//     when it ends inside the newest token (it may start in earlier tokens: "\n" + "\n"), i.e. it
//     starts at or after newest_begin - (sep.size() - 1). The first such occurrence is used.
//  2. After that occurrence, the rest of `step_text` must be whitespace only (space, \t, \r, \n):
//     tokens are never split, so the step keeps the whole newest token and the text history then
//     reads "step text + separator (+ whitespace)" exactly like the KV history. A token that
//     carries text past the separator does not end a step (no such token exists in the Qwen3,
//     Llama 3 and DeepSeek-V3 vocabularies: tests/hogwild_protocol checks it).
//  3. The text before the separator, after dropping trailing spaces/tabs and then any run of
//     closing characters — ) ] } " ' ` * _ $ ” ’ » › 」 』 】 〕 〉 》 ） ］ ｝ ＂ ＇ — must end
//     with sentence-ending punctuation (is_sentence_end): so `**Done.**`, `(see above.)`, `"Yes!"`,
//     `$x=1.$` end a sentence, `\boxed{5}` and `(see above)` do not. Also accepted: the text ends
//     with a fence line that closes a code block (a finished block is a complete unit; this lets
//     the step holding the final ```python solution end).
//  4. The text before the separator is not inside an open block (open_block): a ``` or ~~~ fence
//     opened at the start of a line (after optional spaces/tabs; a backtick line such as ```x```
//     that has another backtick after the run is inline code, as in CommonMark) and not yet closed
//     by a fence line of the same character and at least the same length; or, outside fences, an
//     odd number of `$$`, or a `\[` without its `\]` (a backslash escapes the next byte: `\$`,
//     `\\[2pt]`).
#pragma once

#include <cstddef>
#include <string_view>

namespace hogwild {

/// Result of find_step_end. Byte offsets into the step_text passed.
struct StepEnd {
  bool ended = false;
  size_t separator_begin = 0;  ///< where the separator starts (end of the step's own text)
  size_t end = 0;  ///< == step_text.size() when ended: the whole newest token stays in the step
};

/// Decides whether the step ended with its newest token. `step_text`: the step's bytes so far
/// *including* the newest token (its last `newest_len` bytes; precondition newest_len <=
/// step_text.size()); `separator`: Formatting::step_separator (non-empty). Cost: O(newest_len +
/// separator.size()) unless a candidate end is found, then O(step_text.size()) for the block scan.
StepEnd find_step_end(std::string_view step_text, size_t newest_len, std::string_view separator);

/// true when `text` (trailing spaces/tabs and closing characters dropped as in rule 3) ends with
/// sentence-ending punctuation: . ? ! and ‼ ‽ ⁇ ⁈ ⁉ … (ellipsis), CJK 。 ？ ！ ． ｡ ︒ ﹒ ﹖ ﹗,
/// Arabic ؟ ۔, Devanagari । ॥, Armenian ։ ՞, Greek ; (U+037E), Ethiopic ። ፧, Myanmar ။,
/// Khmer ។, Tibetan །.
bool is_sentence_end(std::string_view text);

/// Kind of block still open at the end of `text` (rule 4).
enum class OpenBlock { none, backtick_fence, tilde_fence, dollar_math, bracket_math };

/// Which block (if any) is open at the end of `text`. Fences take precedence: `$$` and `\[` inside
/// a fence are code, not math.
OpenBlock open_block(std::string_view text);

}  // namespace hogwild
