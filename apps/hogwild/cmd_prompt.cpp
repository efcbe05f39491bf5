// `hogwild prompt -m DIR --messages FILE.json [--no-generation-prompt] [--template-kwargs JSON]
// [--template-name NAME]`: prints the prompt the model's chat template builds from the messages,
// exactly what tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
// **kwargs) returns in transformers (no newline is added after it). FILE may be - for stdin.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/hogwild/commands.h"
#include "chat/chat_template.h"
#include "core/error.h"

namespace hogwild::cli {

namespace {

struct PromptArgs {
  std::string model_dir, messages_path, kwargs_json, template_name;
  bool no_generation_prompt = false;
};

nlohmann::ordered_json parse_json(const std::string& text, const std::string& what) {
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail("{} is not valid JSON: {}", what, e.what());
  }
}

void run_prompt(const PromptArgs& a) {
  if (a.model_dir.empty())
    fail("prompt needs -m DIR (a model directory with tokenizer_config.json).");
  std::string text;
  if (a.messages_path == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream f(a.messages_path, std::ios::binary);
    if (!f) fail("cannot read messages file {}; check the path.", a.messages_path);
    std::stringstream ss;
    ss << f.rdbuf();
    text = ss.str();
  }
  nlohmann::ordered_json messages = parse_json(text, "messages file " + a.messages_path);
  if (!messages.is_array())
    fail(
        "messages file {} must hold a JSON list like [{{\"role\": \"user\", \"content\": "
        "\"Hi\"}}], got a JSON {} value.",
        a.messages_path, messages.type_name());
  for (const auto& m : messages)
    if (!m.is_object())
      fail(
          "every entry of the messages list must be an object with \"role\" and \"content\", got a "
          "{}.",
          m.type_name());
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();
  if (!a.kwargs_json.empty()) {
    kwargs = parse_json(a.kwargs_json, "--template-kwargs");
    if (!kwargs.is_object())
      fail("--template-kwargs must be a JSON object, e.g. '{{\"enable_thinking\": false}}'.");
  }
  auto tmpl = chat::ChatTemplate::load(a.model_dir, a.template_name);
  std::string prompt = tmpl.render(messages, !a.no_generation_prompt, kwargs);
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  std::fflush(stdout);
}

}  // namespace

void register_prompt(CLI::App& app) {
  auto a = std::make_shared<PromptArgs>();
  CLI::App* cmd =
      app.add_subcommand("prompt", "print the prompt the chat template builds from messages");
  cmd->add_option("-m,--model", a->model_dir, "Hugging Face model directory")->required();
  cmd->add_option("--messages", a->messages_path,
                  "JSON file with the list of messages, or - for stdin")
      ->required();
  cmd->add_flag("--no-generation-prompt", a->no_generation_prompt,
                "do not end with the assistant header (add_generation_prompt=False)");
  cmd->add_option("--template-kwargs", a->kwargs_json,
                  "JSON object of extra template variables, e.g. '{\"enable_thinking\": false}'");
  cmd->add_option(
      "--template-name", a->template_name,
      "which named template to use when tokenizer_config.json lists several (default: default)");
  cmd->callback([a] { run_prompt(*a); });
}

}  // namespace hogwild::cli
