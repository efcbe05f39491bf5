// `hogwild info` — not implemented yet (owned by the issue that adds it).
#include "apps/hogwild/commands.h"

namespace hogwild::cli {
void register_info(CLI::App& app) {}
}  // namespace hogwild::cli
