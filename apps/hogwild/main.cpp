// hogwild: parallel LLM reasoning with a shared KV cache (Hogwild! Inference, arXiv 2504.06261).
#include <cstdio>
#include <exception>
#include <string>

#include "apps/hogwild/commands.h"
#include "core/error.h"
#include "core/io.h"

int main(int argc, char** argv) {
  CLI::App app{"hogwild: several workers of one model reason together over one shared KV cache"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "hogwild 0.1.0");
  app.option_defaults()->always_capture_default();  // --help shows every default
  hogwild::cli::register_make_model(app);
  hogwild::cli::register_info(app);
  hogwild::cli::register_generate(app);
  hogwild::cli::register_tokenize(app);
  hogwild::cli::register_prompt(app);
  hogwild::cli::register_run(app);
  hogwild::cli::register_bench(app);
  hogwild::cli::register_eval(app);
  hogwild::cli::register_serve(app);
  hogwild::cli::register_collab(app);
  // A first argument that is neither a command nor an option: name it (CLI11 would only say that
  // a subcommand is required).
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) known = known || sub->check_name(argv[1]);
    if (!known) {
      std::string names;
      for (const CLI::App* sub : app.get_subcommands({}))
        names += (names.empty() ? "" : ", ") + sub->get_name();
      std::fprintf(stderr, "error: unknown command '%s'; the commands are %s (hogwild --help)\n",
                   argv[1], names.c_str());
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
    hogwild::check_stdout();  // output lost to a full disk or a closed pipe is an error, not exit 0
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const hogwild::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
