// Subcommands of the `hogwild` CLI. Each cmd_<name>.cpp defines register_<name>(app), which adds a
// CLI11 subcommand and its callback. Callbacks throw hogwild::Error for bad input; main() prints
// "error: <message>" and exits 1.
#pragma once

#include <CLI/CLI.hpp>

namespace hogwild::cli {

void register_make_model(CLI::App& app);
void register_info(CLI::App& app);
void register_generate(CLI::App& app);
void register_tokenize(CLI::App& app);
void register_prompt(CLI::App& app);
void register_run(CLI::App& app);
void register_bench(CLI::App& app);
void register_eval(CLI::App& app);
void register_serve(CLI::App& app);
void register_collab(CLI::App& app);

}  // namespace hogwild::cli
