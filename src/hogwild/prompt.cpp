#include "hogwild/prompt.h"

#include "chat/chat_template.h"
#include "core/error.h"

namespace hogwild {

std::string build_prompt(const Formatting& f, const chat::ChatTemplate* tmpl,
                         std::string_view problem, int n_workers, int skeleton_points) {
  if (skeleton_points <= 0) f.check_workers(n_workers);
  std::string text;
  if (f.chat.use_template) {
    if (!tmpl)
      fail(
          "formatting '{}' renders the model's chat template, but the model has none (no "
          "chat_template.jinja, and no \"chat_template\" in tokenizer_config.json, or that file is "
          "missing); copy the model's tokenizer_config.json into its directory, or use a "
          "formatting with \"chat\": {{\"use_template\": false}} (e.g. --format plain)",
          f.name);
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    for (auto& m : f.messages(problem, n_workers, skeleton_points))
      messages.push_back({{"role", m.role}, {"content", m.content}});
    nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();
    if (f.chat.has_enable_thinking) kwargs["enable_thinking"] = f.chat.enable_thinking;
    text = f.complete_prompt(tmpl->render(messages, true, kwargs));
  } else {
    text = f.raw_prompt(problem, n_workers, skeleton_points);
  }
  return text + f.layout.history_header;
}

}  // namespace hogwild
