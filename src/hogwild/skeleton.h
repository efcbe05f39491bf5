// Skeleton-of-Thought (session.h, "Skeleton-of-Thought"): reading the outline's points.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hogwild {

/// The points of a Skeleton-of-Thought outline: the text of every line that starts (after spaces)
/// with a number followed by "." or ")", in order, at most max_points (>= 0). The text is trimmed
/// of spaces, and of one markdown emphasis pair ("**", "__", "*", "_") when it both opens and
/// closes the text; lines whose text is then empty are skipped. Example: "Outline:\n1. Count
/// the apples\n2) **Add them**\n\nThen..." gives {"Count the apples", "Add them"}.
std::vector<std::string> parse_outline(std::string_view outline, int max_points);

}  // namespace hogwild
