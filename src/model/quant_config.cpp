// quantization_config of config.json (model/quant.h): parsing and checking it per method (AWQ,
// GPTQ, FP8), writing it back as the quantizers do, and which weight format each linear layer has.
// Sources: transformers utils/quantization_config.py, integrations/awq.py,
// integrations/finegrained_fp8.py; GPTQModel's quantize_config.json.
#include <cctype>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/quant.h"

namespace hogwild {

namespace {

using nlohmann::json;

constexpr const char* kQc = "config.json: quantization_config";

bool present(const json& j, const char* key) { return j.contains(key) && !j[key].is_null(); }

int64_t q_int(const json& j, const char* key, int64_t def) {
  if (!present(j, key)) return def;
  const json& v = j[key];
  if (!v.is_number_integer())
    fail("{}.{} = {} must be an integer", kQc, key, v.dump().substr(0, 64));
  return v.get<int64_t>();
}

bool q_bool(const json& j, const char* key, bool def) {
  if (!present(j, key)) return def;
  const json& v = j[key];
  if (!v.is_boolean()) fail("{}.{} = {} must be true or false", kQc, key, v.dump().substr(0, 64));
  return v.get<bool>();
}

std::string q_string(const json& j, const char* key, const char* def) {
  if (!present(j, key)) return def;
  const json& v = j[key];
  if (!v.is_string()) fail("{}.{} = {} must be a string", kQc, key, v.dump().substr(0, 64));
  return v.get<std::string>();
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> q_module_list(const json& j) {
  std::vector<std::string> out;
  if (!present(j, "modules_to_not_convert")) return out;
  const json& v = j["modules_to_not_convert"];
  if (!v.is_array())
    fail("{}.modules_to_not_convert = {} must be null or a list of module names", kQc,
         v.dump().substr(0, 64));
  for (const json& m : v) {
    if (!m.is_string())
      fail("{}.modules_to_not_convert entry {} must be a string", kQc, m.dump().substr(0, 64));
    out.push_back(m.get<std::string>());
  }
  return out;
}

void check_bits(const json& j, const char* method) {
  const int64_t bits = q_int(j, "bits", 4);
  if (bits != 4)
    fail("{}.bits = {} is not supported; hogwild reads 4-bit {} checkpoints only", kQc, bits,
         method);
}

QuantConfig parse_awq(const json& j) {
  // transformers AwqConfig (utils/quantization_config.py); AutoAWQ writes version "gemm".
  QuantConfig q;
  q.method = QuantMethod::awq;
  check_bits(j, "AWQ");
  q.bits = 4;
  q.group_size = q_int(j, "group_size", 128);
  if (!present(j, "group_size")) q.defaulted.push_back("quantization_config.group_size = 128");
  if (q.group_size != 32 && q.group_size != 64 && q.group_size != 128)
    fail(
        "{}.group_size = {} is not supported for AWQ; use a checkpoint with group size 32, 64 "
        "or 128",
        kQc, q.group_size);
  q.zero_point = q_bool(j, "zero_point", true);
  if (!q.zero_point)
    fail(
        "{}.zero_point = false is not supported; hogwild reads AWQ with zero points (the AutoAWQ "
        "default)",
        kQc);
  const std::string version = q_string(j, "version", "gemm");
  if (lower(version) != "gemm")
    fail(
        "{}.version = \"{}\" is not supported; hogwild reads AWQ version \"gemm\" (GEMV, exllama "
        "and ipex layouts are not read)",
        kQc, version.substr(0, 32));
  q.modules_to_not_convert = q_module_list(j);
  return q;
}

QuantConfig parse_gptq(const json& j) {
  // transformers GPTQConfig; GPTQModel/AutoGPTQ quantize_config.json fields.
  QuantConfig q;
  q.method = QuantMethod::gptq;
  check_bits(j, "GPTQ");
  q.bits = 4;
  q.group_size = q_int(j, "group_size", 128);
  if (!present(j, "group_size")) q.defaulted.push_back("quantization_config.group_size = 128");
  if (q.group_size != -1 && (q.group_size <= 0 || q.group_size % 16 != 0))
    fail(
        "{}.group_size = {} is not supported for GPTQ; use -1 (one group per layer) or a positive "
        "multiple of 16",
        kQc, q.group_size);
  q.desc_act = q_bool(j, "desc_act", false);
  q.sym = q_bool(j, "sym", true);
  const std::string fmt = q_string(j, "checkpoint_format", "gptq");
  if (fmt == "gptq")
    q.gptq_v1_zeros = true;
  else if (fmt == "gptq_v2")
    q.gptq_v1_zeros = false;
  else
    fail(
        "{}.checkpoint_format = \"{}\" is not supported; hogwild reads \"gptq\" and \"gptq_v2\" "
        "(marlin, bitblas and other repacked layouts are not read)",
        kQc, fmt.substr(0, 32));
  if (q_bool(j, "lm_head", false))
    fail(
        "{}.lm_head = true (a quantized lm_head) is not supported; use a checkpoint with a dense "
        "lm_head",
        kQc);
  if (present(j, "dynamic") && !(j["dynamic"].is_object() && j["dynamic"].empty()))
    fail("{}.dynamic = {} (per-module GPTQ settings) is not supported", kQc,
         j["dynamic"].dump().substr(0, 64));
  q.modules_to_not_convert = q_module_list(j);
  return q;
}

QuantConfig parse_fp8(const json& j) {
  // transformers FineGrainedFP8Config.
  QuantConfig q;
  q.method = QuantMethod::fp8;
  const std::string fmt = q_string(j, "fmt", "e4m3");
  if (fmt != "e4m3")
    fail("{}.fmt = \"{}\" is not supported; hogwild reads FP8 \"e4m3\" (float8_e4m3fn)", kQc,
         fmt.substr(0, 32));
  const std::string act = q_string(j, "activation_scheme", "dynamic");
  if (act != "dynamic")
    fail(
        "{}.activation_scheme = \"{}\" is not supported; hogwild reads \"dynamic\" (no stored "
        "activation scales)",
        kQc, act.substr(0, 32));
  q.block_n = q.block_k = 128;
  if (present(j, "weight_block_size")) {
    const json& b = j["weight_block_size"];
    if (!b.is_array() || b.size() != 2 || !b[0].is_number_integer() || !b[1].is_number_integer() ||
        b[0].get<int64_t>() <= 0 || b[1].get<int64_t>() <= 0)
      fail(
          "{}.weight_block_size = {} is not supported; it must be two positive integers [n, k] "
          "(per-tensor FP8 is not read)",
          kQc, b.dump().substr(0, 64));
    q.block_n = b[0].get<int64_t>();
    q.block_k = b[1].get<int64_t>();
  } else {
    fail(
        "{}.weight_block_size is missing; hogwild reads block-scaled FP8 checkpoints only "
        "(weight_block_size [n, k])",
        kQc);
  }
  q.modules_to_not_convert = q_module_list(j);
  return q;
}

// `module` with every run of digits replaced by "*" (transformers' fp8 replace_with_fp8_linear
// matches modules_to_not_convert against this form).
std::string digits_to_star(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(s[i]))) {
      out += '*';
      while (i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

const char* quant_method_name(QuantMethod m) {
  switch (m) {
    case QuantMethod::none:
      return "none";
    case QuantMethod::awq:
      return "awq";
    case QuantMethod::gptq:
      return "gptq";
    case QuantMethod::fp8:
      return "fp8";
  }
  return "?";
}

const char* weight_format_name(WeightFormat f) {
  switch (f) {
    case WeightFormat::dense:
      return "dense";
    case WeightFormat::int4:
      return "int4";
    case WeightFormat::fp8:
      return "fp8";
  }
  return "?";
}

QuantConfig parse_quant_config(const json& config_json) {
  if (!config_json.is_object() || !present(config_json, "quantization_config")) return {};
  const json& j = config_json["quantization_config"];
  if (!j.is_object()) fail("{} = {} must be an object", kQc, j.dump().substr(0, 64));
  if (!present(j, "quant_method") || !j["quant_method"].is_string())
    fail(
        "{} has no \"quant_method\" string; hogwild reads quant_method \"awq\", \"gptq\" and "
        "\"fp8\"",
        kQc);
  const std::string m = j["quant_method"].get<std::string>();
  if (m == "awq") return parse_awq(j);
  if (m == "gptq") return parse_gptq(j);
  if (m == "fp8") return parse_fp8(j);
  fail(
      "{}.quant_method = \"{}\" is not supported; hogwild reads \"awq\" (GEMM), \"gptq\" (4-bit) "
      "and \"fp8\" (block-scaled e4m3); use one of those or the model's bf16 release",
      kQc, m.substr(0, 32));
}

json quant_config_to_json(const QuantConfig& q) {
  auto modules = [&]() -> json {
    return q.modules_to_not_convert.empty() ? json(nullptr) : json(q.modules_to_not_convert);
  };
  switch (q.method) {
    case QuantMethod::none:
      return nullptr;
    case QuantMethod::awq:  // as AutoAWQ / transformers AwqConfig.to_dict write it
      return {{"quant_method", "awq"},      {"bits", q.bits},
              {"group_size", q.group_size}, {"zero_point", q.zero_point},
              {"version", "gemm"},          {"modules_to_not_convert", modules()}};
    case QuantMethod::gptq: {  // as GPTQModel's quantize_config.json
      json j = {{"quant_method", "gptq"},
                {"bits", q.bits},
                {"group_size", q.group_size},
                {"desc_act", q.desc_act},
                {"sym", q.sym},
                {"lm_head", false},
                {"static_groups", false},
                {"true_sequential", true},
                {"checkpoint_format", q.gptq_v1_zeros ? "gptq" : "gptq_v2"}};
      if (!q.modules_to_not_convert.empty()) j["modules_to_not_convert"] = q.modules_to_not_convert;
      return j;
    }
    case QuantMethod::fp8: {  // as transformers FineGrainedFP8Config
      json j = {{"quant_method", "fp8"},
                {"fmt", "e4m3"},
                {"activation_scheme", "dynamic"},
                {"weight_block_size", {q.block_n, q.block_k}}};
      if (!q.modules_to_not_convert.empty()) j["modules_to_not_convert"] = q.modules_to_not_convert;
      return j;
    }
  }
  return nullptr;
}

WeightFormat linear_format(const QuantConfig& q, const std::string& module) {
  if (q.method == QuantMethod::none) return WeightFormat::dense;
  // transformers keeps the output head and the embeddings in full precision for every method
  // (get_keys_to_not_convert / replace_with_fp8_linear add "lm_head").
  if (module == "lm_head" || module.ends_with(".lm_head") ||
      module.find("embed_tokens") != std::string::npos)
    return WeightFormat::dense;
  // A fragment names a module when it is a substring of its name (integrations/awq.py
  // replace_with_awq_linear), or of the name with digit runs as "*" (finegrained_fp8.py).
  const std::string starred = digits_to_star(module);
  for (const std::string& f : q.modules_to_not_convert)
    if (!f.empty() && (module.find(f) != std::string::npos || starred.find(f) != std::string::npos))
      return WeightFormat::dense;
  return q.method == QuantMethod::fp8 ? WeightFormat::fp8 : WeightFormat::int4;
}

int64_t layer_group_size(const QuantConfig& q, int64_t in) {
  return q.group_size == -1 ? in : q.group_size;
}

}  // namespace hogwild
