// `hogwild make-model` — not implemented yet (owned by the issue that adds it).
#include "apps/hogwild/commands.h"

namespace hogwild::cli {
void register_make_model(CLI::App& app) {}
}  // namespace hogwild::cli
