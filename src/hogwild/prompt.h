// The session's prompt text (docs/ARCHITECTURE.md §1): the formatting's chat messages (rules for
// n_workers, optional example, the problem) rendered by the model's own chat template, completed
// with the formatting's assistant prefix (e.g. "<think>\n"), then layout.history_header.
#pragma once

#include <string>
#include <string_view>

#include "hogwild/formatting.h"

namespace hogwild {
namespace chat {
class ChatTemplate;
}

/// tmpl: the model's chat template, or nullptr when it has none. Throws hogwild::Error when the
/// formatting asks for the chat template (chat.use_template) and tmpl is nullptr, or when
/// rendering fails. skeleton_points > 0: the Skeleton-of-Thought prompt (Formatting::messages).
std::string build_prompt(const Formatting& f, const chat::ChatTemplate* tmpl,
                         std::string_view problem, int n_workers, int skeleton_points = 0);

}  // namespace hogwild
