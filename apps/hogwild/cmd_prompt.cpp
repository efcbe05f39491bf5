// `hogwild prompt` — not implemented yet (owned by the issue that adds it).
#include "apps/hogwild/commands.h"

namespace hogwild::cli {
void register_prompt(CLI::App& app) {}
}  // namespace hogwild::cli
