// Chat flags shared by `hogwild prompt` and `hogwild generate`: the messages (a JSON file, or a
// system text and a user text), the template's keyword arguments and the template's name, and
// the prompt the model's chat template renders from them (chat/chat_template.h).
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "apps/hogwild/cli_util.h"
#include "chat/chat_template.h"
#include "core/error.h"

namespace hogwild::cli {

struct ChatFlags {
  std::string messages_path;  // --messages FILE ("-" = stdin)
  std::string system;         // --system TEXT (generate)
  std::string kwargs_json;    // --template-kwargs '{"enable_thinking": false}'
  std::string template_name;  // --template-name NAME
  bool no_generation_prompt = false;
};

/// Adds --template-kwargs and --template-name.
inline void add_template_flags(CLI::App* c, ChatFlags& f) {
  c->add_option("--template-kwargs", f.kwargs_json,
                "JSON object of extra template variables, e.g. '{\"enable_thinking\": false}'");
  c->add_option("--template-name", f.template_name,
                "which named template to use when tokenizer_config.json lists several")
      ->default_str("default");
}

inline nlohmann::ordered_json parse_json_arg(const std::string& text, const std::string& what) {
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail("{} is not valid JSON: {}", what, e.what());
  }
}

/// The messages list of a --messages file ("-" = stdin), checked: a JSON list of objects.
inline nlohmann::ordered_json load_messages(const std::string& path) {
  const std::string text = file_or_stdin(path, "messages file");
  nlohmann::ordered_json messages = parse_json_arg(text, "messages file " + path);
  if (!messages.is_array())
    fail(
        "messages file {} must hold a JSON list like [{{\"role\": \"user\", \"content\": "
        "\"Hi\"}}], got a JSON {} value.",
        path, messages.type_name());
  for (const auto& m : messages)
    if (!m.is_object())
      fail(
          "every entry of the messages list must be an object with \"role\" and \"content\", got a "
          "{}.",
          m.type_name());
  return messages;
}

/// --template-kwargs as a JSON object ({} when not given).
inline nlohmann::ordered_json template_kwargs(const ChatFlags& f) {
  if (f.kwargs_json.empty()) return nlohmann::ordered_json::object();
  nlohmann::ordered_json kwargs = parse_json_arg(f.kwargs_json, "--template-kwargs");
  if (!kwargs.is_object())
    fail("--template-kwargs must be a JSON object, e.g. '{{\"enable_thinking\": false}}'.");
  return kwargs;
}

/// The prompt text the model's chat template renders from `messages` (with the generation prompt
/// unless f.no_generation_prompt), as tokenizer.apply_chat_template(tokenize=False) does.
inline std::string render_chat(const std::string& model_dir, const ChatFlags& f,
                               const nlohmann::ordered_json& messages) {
  const nlohmann::ordered_json kwargs = template_kwargs(f);  // checked before the template loads
  auto tmpl = chat::ChatTemplate::load(model_dir, f.template_name);
  return tmpl.render(messages, !f.no_generation_prompt, kwargs);
}

}  // namespace hogwild::cli
