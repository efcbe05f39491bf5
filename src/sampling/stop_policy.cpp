// The EOS set of every command (stop_policy.h).
#include "sampling/stop_policy.h"

#include <algorithm>

#include "core/error.h"

namespace hogwild {

std::vector<int32_t> eos_id_union(const std::vector<int32_t>& tokenizer,
                                  const std::vector<int64_t>& config,
                                  const std::vector<int64_t>& generation) {
  std::vector<int32_t> out;
  auto add = [&](int64_t id) {
    const auto i = static_cast<int32_t>(id);
    if (id == i && std::find(out.begin(), out.end(), i) == out.end()) out.push_back(i);
  };
  for (int32_t id : tokenizer) add(id);
  for (int64_t id : config) add(id);
  for (int64_t id : generation) add(id);
  return out;
}

StopPolicy resolve_stop_policy(const std::optional<TokenizerEos>& tokenizer_eos,
                               const std::vector<int64_t>& config_eos,
                               const std::vector<int64_t>& generation_eos, int64_t vocab_size,
                               bool ignore_eos) {
  if (tokenizer_eos && !tokenizer_eos->id)
    fail(
        "tokenizer_config.json: eos_token '{}' is not a token of tokenizer.json, so generation "
        "could never stop on it; set eos_token to the model's end-of-turn token (or null)",
        tokenizer_eos->text);
  auto check = [&](const std::vector<int64_t>& ids, const char* file) {
    for (int64_t id : ids)
      if (id < 0 || id >= vocab_size)
        fail(
            "{}: eos_token_id {} is outside the vocabulary [0, {}) (vocab_size in config.json); "
            "fix eos_token_id",
            file, id, vocab_size);
  };
  check(config_eos, "config.json");
  check(generation_eos, "generation_config.json");
  StopPolicy p;
  p.ignore_eos = ignore_eos;
  std::vector<int32_t> tok;
  if (tokenizer_eos) {
    if (*tokenizer_eos->id < 0 || *tokenizer_eos->id >= vocab_size)
      fail(
          "tokenizer_config.json: eos_token '{}' is id {}, outside the model's vocabulary [0, {}) "
          "(vocab_size in config.json); the tokenizer does not belong to this model",
          tokenizer_eos->text, *tokenizer_eos->id, vocab_size);
    tok.push_back(*tokenizer_eos->id);
  }
  p.eos_ids = eos_id_union(tok, config_eos, generation_eos);
  for (int32_t id : p.eos_ids) {
    std::string s;
    auto add = [&](const std::string& what) { s += (s.empty() ? "" : ", ") + what; };
    if (!tok.empty() && tok[0] == id) add("tokenizer_config.json eos_token '" + tokenizer_eos->text + "'");
    if (std::count(config_eos.begin(), config_eos.end(), id)) add("config.json");
    if (std::count(generation_eos.begin(), generation_eos.end(), id)) add("generation_config.json");
    p.sources.push_back(s);
  }
  return p;
}

std::string StopPolicy::describe() const {
  if (eos_ids.empty()) return "none (no eos_token or eos_token_id anywhere)";
  std::string s;
  for (size_t i = 0; i < eos_ids.size(); ++i)
    s += fmt::format("{}{} ({})", i ? ", " : "", eos_ids[i], sources[i]);
  return ignore_eos ? s + ", ignored (--ignore-eos)" : s;
}

}  // namespace hogwild
