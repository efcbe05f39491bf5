#include "sampling/generation_config.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/io.h"

namespace hogwild {
namespace {

using json = nlohmann::json;

bool present(const json& j, const char* key) { return j.contains(key) && !j.at(key).is_null(); }

double get_number(const json& j, const char* key) {
  const json& v = j.at(key);
  if (!v.is_number()) fail("generation_config.json: '{}' must be a number, got {}", key, v.dump());
  return v.get<double>();
}

int64_t get_int(const json& j, const char* key) {
  const json& v = j.at(key);
  if (!v.is_number_integer())
    fail("generation_config.json: '{}' must be an integer, got {}", key, v.dump());
  return v.get<int64_t>();
}

}  // namespace

GenerationConfig parse_generation_config(const json& j) {
  if (!j.is_object()) fail("generation_config.json: expected a JSON object, got {}", j.type_name());
  GenerationConfig g;
  if (present(j, "do_sample")) {
    if (!j.at("do_sample").is_boolean())
      fail("generation_config.json: 'do_sample' must be true or false, got {}",
           j.at("do_sample").dump());
    g.do_sample = j.at("do_sample").get<bool>();
  }
  if (present(j, "temperature")) g.temperature = get_number(j, "temperature");
  if (present(j, "top_k")) g.top_k = get_int(j, "top_k");
  if (present(j, "top_p")) g.top_p = get_number(j, "top_p");
  if (present(j, "min_p")) g.min_p = get_number(j, "min_p");
  if (present(j, "repetition_penalty")) g.repetition_penalty = get_number(j, "repetition_penalty");
  if (present(j, "max_new_tokens")) g.max_new_tokens = get_int(j, "max_new_tokens");
  if (present(j, "max_length")) g.max_length = get_int(j, "max_length");
  if (present(j, "eos_token_id")) {
    const json& e = j.at("eos_token_id");
    if (e.is_number_integer()) {
      g.eos_token_id = {e.get<int64_t>()};
    } else if (e.is_array()) {
      for (const json& x : e) {
        if (!x.is_number_integer())
          fail("generation_config.json: 'eos_token_id' list must hold integers, got {}", x.dump());
        g.eos_token_id.push_back(x.get<int64_t>());
      }
    } else {
      fail("generation_config.json: 'eos_token_id' must be an integer or a list, got {}", e.dump());
    }
  }
  if (g.temperature < 0)
    fail("generation_config.json: temperature must be >= 0, got {}", g.temperature);
  if (g.top_k < 0) fail("generation_config.json: top_k must be >= 0, got {}", g.top_k);
  if (!(g.top_p > 0 && g.top_p <= 1))
    fail("generation_config.json: top_p must be in (0, 1], got {}", g.top_p);
  if (!(g.min_p >= 0 && g.min_p <= 1))
    fail("generation_config.json: min_p must be in [0, 1], got {}", g.min_p);
  if (!(g.repetition_penalty > 0))
    fail("generation_config.json: repetition_penalty must be > 0, got {}", g.repetition_penalty);
  if (g.max_new_tokens && *g.max_new_tokens < 0)
    fail("generation_config.json: max_new_tokens must be >= 0, got {}", *g.max_new_tokens);
  return g;
}

GenerationConfig load_generation_config(const std::string& model_dir) {
  const std::filesystem::path p = std::filesystem::path(model_dir) / "generation_config.json";
  std::error_code ec;
  if (!std::filesystem::exists(p, ec)) return GenerationConfig{};
  const std::string text = read_file(p, "generation_config.json");
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    fail("{} is not valid JSON ({}); fix or delete the file", p.string(), e.what());
  }
  return parse_generation_config(j);
}

}  // namespace hogwild
