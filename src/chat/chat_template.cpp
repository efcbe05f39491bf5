#include "chat/chat_template.h"

#include <fstream>
#include <sstream>

#include "chat/parser.h"
#include "core/error.h"
#include "core/io.h"

namespace hogwild::chat {
namespace {

std::string read_file(const std::filesystem::path& p) {
  return hogwild::read_file(p, p.filename().string());
}

nlohmann::ordered_json read_json(const std::filesystem::path& p) {
  try {
    return nlohmann::ordered_json::parse(read_file(p));
  } catch (const nlohmann::json::exception& e) {
    fail("{} is not valid JSON ({}); re-download it from the model repository.", p.string(),
         e.what());
  }
}

// transformers' pick from a list of named templates: the requested name, else "default". A single
// template has no name but "default": another name is refused rather than ignored.
std::string pick_template(const nlohmann::ordered_json& t, const std::string& name,
                          const std::string& where) {
  if (t.is_string()) {
    if (!name.empty() && name != "default")
      fail(
          "{}: no chat template named '{}': the model has a single template (named default); "
          "leave out --template-name",
          where, name);
    return t.get<std::string>();
  }
  if (!t.is_array())
    fail("{}: chat_template must be a string or a list of {{name, template}}.", where);
  std::string want = name.empty() ? "default" : name;
  std::string names;
  for (const auto& e : t) {
    if (!e.is_object() || !e.contains("name") || !e.contains("template") ||
        !e["name"].is_string() || !e["template"].is_string())
      fail("{}: chat_template list entries must be {{\"name\": ..., \"template\": ...}}.", where);
    if (e["name"] == want) return e["template"].get<std::string>();
    names += (names.empty() ? "" : ", ") + e["name"].get<std::string>();
  }
  fail("{}: no chat template named '{}' (available: {}); pass one of those names.", where, want,
       names);
}

}  // namespace

SpecialTokens SpecialTokens::from_tokenizer_config(const nlohmann::ordered_json& config) {
  SpecialTokens st;
  if (!config.is_object()) return st;
  auto text = [](const nlohmann::ordered_json& v) -> std::optional<std::string> {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_object() && v.contains("content") && v["content"].is_string())
      return v["content"].get<std::string>();
    return std::nullopt;
  };
  for (const char* k : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                        "cls_token", "mask_token"}) {
    if (!config.contains(k)) continue;
    if (auto t = text(config[k])) st.map[k] = *t;
  }
  if (config.contains("additional_special_tokens") &&
      config["additional_special_tokens"].is_array()) {
    auto list = nlohmann::ordered_json::array();
    for (const auto& e : config["additional_special_tokens"])
      if (auto t = text(e)) list.push_back(*t);
    st.map["additional_special_tokens"] = list;
  }
  return st;
}

ChatTemplate ChatTemplate::load(const std::filesystem::path& model_dir, const std::string& name) {
  if (!std::filesystem::is_directory(model_dir))
    fail("{} is not a directory; pass the model directory (with tokenizer_config.json).",
         model_dir.string());
  auto cfg_path = model_dir / "tokenizer_config.json";
  nlohmann::ordered_json cfg = nlohmann::ordered_json::object();
  if (std::filesystem::exists(cfg_path)) cfg = read_json(cfg_path);
  SpecialTokens tokens = SpecialTokens::from_tokenizer_config(cfg);
  auto jinja_path = model_dir / "chat_template.jinja";
  auto json_path = model_dir / "chat_template.json";
  std::string source, where;
  if (std::filesystem::exists(jinja_path)) {
    where = jinja_path.string();
    if (!name.empty() && name != "default")
      fail(
          "{}: no chat template named '{}': the model has a single template (named default); "
          "leave out --template-name",
          jinja_path.string(), name);
    source = read_file(jinja_path);
  } else if (cfg.is_object() && cfg.contains("chat_template") && !cfg["chat_template"].is_null()) {
    source = pick_template(cfg["chat_template"], name, cfg_path.string());
    where = cfg_path.string();
  } else if (std::filesystem::exists(json_path)) {
    auto j = read_json(json_path);
    if (!j.is_object() || !j.contains("chat_template"))
      fail("{} has no \"chat_template\" key.", json_path.string());
    source = pick_template(j["chat_template"], name, json_path.string());
    where = json_path.string();
  } else {
    throw NoChatTemplate(
        fmt::format("{} has no chat template (no chat_template.jinja, and no chat_template in "
                    "tokenizer_config.json); "
                    "use a chat/instruct model or add a chat_template.jinja file.",
                    model_dir.string()));
  }
  try {
    return from_string(source, std::move(tokens));
  } catch (const Error& e) {
    fail("{}: {}", where, e.what());  // which file holds the broken template
  }
}

ChatTemplate ChatTemplate::from_string(const std::string& source, SpecialTokens tokens,
                                       Limits limits) {
  ChatTemplate t;
  t.source_ = source;
  t.program_ = parse_template(source);
  t.tokens_ = std::move(tokens);
  t.limits_ = limits;
  return t;
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                 const nlohmann::ordered_json& kwargs) const {
  if (!messages.is_array())
    fail(
        "chat messages must be a JSON array of {{\"role\": ..., \"content\": ...}} objects, got "
        "{}.",
        messages.type_name());
  if (!kwargs.is_null() && !kwargs.is_object())
    fail("template kwargs must be a JSON object (e.g. {{\"enable_thinking\": false}}), got {}.",
         kwargs.type_name());
  Dict ctx;
  ctx.set("messages", from_json(messages));
  ctx.set("tools", Value(None{}));
  ctx.set("documents", Value(None{}));
  ctx.set("add_generation_prompt", Value(add_generation_prompt));
  for (const auto& [k, v] : tokens_.map.items()) ctx.set(k, from_json(v));
  if (kwargs.is_object())
    for (const auto& [k, v] : kwargs.items()) ctx.set(k, from_json(v));
  return run(ctx);
}

std::string ChatTemplate::run(const Dict& ctx) const {
  Interp in(program_, limits_);
  try {
    return in.render(ctx);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // a bug, not bad input: still an error message, not a crash
    fail("internal chat template error (please report it with the template): {}", e.what());
  }
}

std::string ChatTemplate::render_context(const nlohmann::ordered_json& context) const {
  if (!context.is_object())
    fail("template context must be a JSON object, got {}.", context.type_name());
  Value ctx = from_json(context);
  return run(ctx.dict());
}

std::string ChatTemplate::render(const nlohmann::json& messages, bool add_generation_prompt,
                                 const nlohmann::json& kwargs) const {
  return render(nlohmann::ordered_json::parse(messages.dump()), add_generation_prompt,
                nlohmann::ordered_json::parse(kwargs.dump()));
}

}  // namespace hogwild::chat
