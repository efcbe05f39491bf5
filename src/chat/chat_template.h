// Chat templates of HF model directories, rendered exactly as transformers'
// tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=..., **kwargs)
// renders them (transformers/utils/chat_template_utils.py: jinja2 ImmutableSandboxedEnvironment
// with trim_blocks, lstrip_blocks, loopcontrols, a tojson with ensure_ascii=False, raise_exception
// and strftime_now globals).
//
//   auto tmpl = hogwild::chat::ChatTemplate::load("models/Qwen3-8B");
//   std::string prompt = tmpl.render(messages, /*add_generation_prompt=*/true,
//                                    {{"enable_thinking", false}});
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "chat/interp.h"
#include "core/error.h"

namespace hogwild::chat {

/// Special tokens transformers passes to the template (its special_tokens_map): each present one
/// becomes a template variable (bos_token, eos_token, ...). Absent tokens stay undefined.
struct SpecialTokens {
  nlohmann::ordered_json map = nlohmann::ordered_json::object();  // name → string (or list)
  /// Reads bos/eos/unk/sep/pad/cls/mask_token and additional_special_tokens from a parsed
  /// tokenizer_config.json; each may be a string, null, or an AddedToken object {content: ...}.
  static SpecialTokens from_tokenizer_config(const nlohmann::ordered_json& config);
};

/// Thrown by ChatTemplate::load when the model directory has no chat template at all (as opposed
/// to one that cannot be read or parsed).
class NoChatTemplate : public Error {
 public:
  using Error::Error;
};

class ChatTemplate {
 public:
  /// Loads the chat template of a model directory: `chat_template.jinja` if present, else
  /// tokenizer_config.json's `chat_template` (a string, or a list of {name, template} from which
  /// `name` is picked, "default" unless given; a single template answers only to "default").
  /// Special tokens come from tokenizer_config.json. Throws NoChatTemplate when the directory has
  /// no chat template, hogwild::Error when a file is unreadable or not JSON, or the template has a
  /// syntax error (with line/column).
  static ChatTemplate load(const std::filesystem::path& model_dir, const std::string& name = "");
  /// Parses template source. Throws hogwild::Error on a syntax error.
  static ChatTemplate from_string(const std::string& source, SpecialTokens tokens = {},
                                  Limits limits = {});

  /// Renders `messages` (a JSON array of {role, content, ...} objects). Template variables:
  /// messages, tools = None, documents = None, add_generation_prompt, the special tokens, then
  /// `kwargs` (a JSON object, e.g. {"enable_thinking": false}) which override any of those.
  /// Returns the prompt text, byte-identical to apply_chat_template(tokenize=False). Throws
  /// hogwild::Error when messages is not an array, kwargs not an object, on a template runtime
  /// error (undefined attribute access, type errors, raise_exception(...)) or a limit.
  std::string render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                     const nlohmann::ordered_json& kwargs = nlohmann::ordered_json::object()) const;
  /// Same, for callers holding nlohmann::json (whose objects are key-sorted: pass ordered_json
  /// when the template prints whole objects with tojson and key order matters).
  std::string render(const nlohmann::json& messages, bool add_generation_prompt,
                     const nlohmann::json& kwargs = nlohmann::json::object()) const;

  /// Renders with exactly the variables in `context` (a JSON object; no defaults added).
  std::string render_context(const nlohmann::ordered_json& context) const;

  const std::string& source() const { return source_; }
  const SpecialTokens& special_tokens() const { return tokens_; }

 private:
  std::string run(const Dict& ctx) const;

  std::string source_;
  std::shared_ptr<const Program> program_;
  SpecialTokens tokens_;
  Limits limits_;
};

}  // namespace hogwild::chat
