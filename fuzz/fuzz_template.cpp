// libFuzzer target for the chat-template interpreter: parses the input as a template and, when it
// parses, renders it against a small fixed conversation with tight limits. Any input must end in
// output or a hogwild::Error — never a crash, hang, leak or sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string>

#include "chat/chat_template.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 1 << 16) return 0;
  static const nlohmann::ordered_json messages = nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Héllo {{ x }} <think>"},
    {"role": "assistant", "content": "<think>\nhm\n</think>\n\nHi!", "reasoning_content": null},
    {"role": "user", "content": "2+2?", "extra": [1, 2.5, true, {"k": "v"}]}
  ])");
  static const nlohmann::ordered_json kwargs = {{"enable_thinking", false}, {"n", 3}};
  hogwild::chat::Limits limits;
  limits.max_steps = 20000;
  limits.max_bytes = 1 << 16;
  limits.max_items = 10000;
  limits.max_call_depth = 16;
  hogwild::chat::SpecialTokens tokens;
  tokens.map = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
  try {
    auto t = hogwild::chat::ChatTemplate::from_string(
        std::string(reinterpret_cast<const char*>(data), size), tokens, limits);
    (void)t.render(messages, true, kwargs);
  } catch (const hogwild::Error& e) {
    // A std::exception that escaped the interpreter is a bug even though render() reports it.
    if (std::string(e.what()).rfind("internal chat template error", 0) == 0) __builtin_trap();
  }
  return 0;
}
