// `hogwild prompt -m DIR --messages FILE.json [--no-generation-prompt] [--template-kwargs JSON]
// [--template-name NAME]`: prints the prompt the model's chat template builds from the messages,
// exactly what tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
// **kwargs) returns in transformers (no newline is added after it). FILE may be - for stdin.
#include <cstdio>
#include <memory>

#include "apps/hogwild/chat_flags.h"
#include "apps/hogwild/commands.h"
#include "core/error.h"

namespace hogwild::cli {

namespace {

void run_prompt(const ChatFlags& a, const std::string& model_dir) {
  if (model_dir.empty())
    fail("prompt needs -m DIR (a model directory with tokenizer_config.json).");
  const nlohmann::ordered_json messages = load_messages(a.messages_path);
  const std::string prompt = render_chat(model_dir, a, messages);
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  check_stdout();
}

}  // namespace

void register_prompt(CLI::App& app) {
  auto a = std::make_shared<ChatFlags>();
  auto dir = std::make_shared<std::string>();
  CLI::App* cmd =
      app.add_subcommand("prompt", "print the prompt the chat template builds from messages");
  cmd->add_option("-m,--model", *dir, "Hugging Face model directory")->required();
  cmd->add_option("--messages", a->messages_path,
                  "JSON file with the list of messages, or - for stdin")
      ->required();
  cmd->add_flag("--no-generation-prompt", a->no_generation_prompt,
                "do not end with the assistant header (add_generation_prompt=False)");
  add_template_flags(cmd, *a);
  cmd->callback([a, dir] { run_prompt(*a, *dir); });
}

}  // namespace hogwild::cli
