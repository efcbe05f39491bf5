// `hogwild info -m DIR`: what a model directory holds, from config.json and the safetensors headers
// only (no tensor data is read, so it is instant for any size).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "apps/hogwild/commands.h"
#include "core/error.h"
#include "core/json_text.h"
#include "model/loader.h"
#include "sampling/generation_config.h"
#include "sampling/stop_policy.h"
#include "tokenizer/tokenizer.h"

namespace hogwild::cli {

namespace {

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  return u == 0 ? fmt::format("{:.0f} {}", b, units[u]) : fmt::format("{:.2f} {}", b, units[u]);
}

std::string rope_desc(const ModelConfig& c) {
  const RopeScaling& r = c.rope_scaling;
  std::string s =
      fmt::format("theta {}, rotary_dim {} of {}", c.rope_theta, c.rotary_dim(), c.head_dim);
  if (r.rope_type == "default") return s + ", no scaling";
  s += fmt::format(", {} factor {}", r.rope_type, r.factor);
  if (r.rope_type == "llama3")
    s += fmt::format(" (low_freq_factor {}, high_freq_factor {})", r.low_freq_factor,
                     r.high_freq_factor);
  if (r.original_max_position_embeddings > 0)
    s += fmt::format(", original context {}", r.original_max_position_embeddings);
  return s;
}

// The stop policy of the directory (stop_policy.h) in one line, or what is wrong with it.
struct StopInfo {
  std::optional<StopPolicy> policy;
  std::string error;
};

StopInfo stop_info(const std::string& dir, const ModelConfig& c) {
  StopInfo s;
  try {
    std::optional<TokenizerEos> teos;
    std::error_code ec;
    if (std::filesystem::exists(std::filesystem::path(dir) / "tokenizer.json", ec)) {
      const Tokenizer tok = Tokenizer::from_dir(dir);
      tok.check_fits(c.vocab_size, dir);
      if (tok.config().eos_token) teos = TokenizerEos{*tok.config().eos_token, tok.eos_id()};
    }
    s.policy = resolve_stop_policy(teos, c.eos_token_id, load_generation_config(dir).eos_token_id,
                                   c.vocab_size);
  } catch (const Error& e) {
    s.error = e.what();
  }
  return s;
}

// The weight format in one line ("gptq int4, group_size 128, desc_act, sym (z = 8), ...").
std::string weight_format_desc(const QuantConfig& q, int64_t n_quantized, int64_t n_linear) {
  if (q.method == QuantMethod::none) return "dense (no quantization_config)";
  std::string s;
  if (q.method == QuantMethod::fp8) {
    s = fmt::format("fp8 e4m3, weight_block_size [{}, {}], activation_scheme dynamic", q.block_n,
                    q.block_k);
  } else {
    s = fmt::format("{} int{}, group_size {}{}", quant_method_name(q.method), q.bits, q.group_size,
                    q.group_size == -1 ? " (one group per layer)" : "");
    if (q.method == QuantMethod::awq)
      s += ", zero_point, version gemm";
    else
      s += fmt::format(", desc_act {}, sym {}, checkpoint_format {}", q.desc_act, q.sym,
                       q.gptq_v1_zeros ? "gptq" : "gptq_v2");
  }
  return s + fmt::format(" ({} of {} linear layers; embeddings, lm_head, norms dense)", n_quantized,
                         n_linear);
}

nlohmann::json weight_format_json(const QuantConfig& q) {
  nlohmann::json j = {{"quant_method", quant_method_name(q.method)}};
  if (q.method == QuantMethod::fp8) {
    j["fmt"] = "e4m3";
    j["weight_block_size"] = {q.block_n, q.block_k};
  } else if (q.method != QuantMethod::none) {
    j["bits"] = q.bits;
    j["group_size"] = q.group_size;
    if (q.method == QuantMethod::gptq) {
      j["desc_act"] = q.desc_act;
      j["sym"] = q.sym;
      j["checkpoint_format"] = q.gptq_v1_zeros ? "gptq" : "gptq_v2";
    }
  }
  return j;
}

/// What `info` reports of a model directory, gathered once for both outputs.
struct ModelFacts {
  ModelConfig c;
  size_t n_files = 0, n_tensors = 0;
  uint64_t params = 0, bytes = 0, decode_bytes = 0, active_bytes = 0;
  std::set<std::string> dtypes;
  std::string dtype_list;
  int64_t n_linear = 0, n_quantized = 0, kv16 = 0, kv32 = 0;
  bool moe = false;
  StopInfo stop;
};

ModelFacts gather_facts(const std::string& dir) {
  ModelFacts f;
  f.c = load_model_config(dir);
  const ModelConfig& c = f.c;
  Checkpoint ck(dir);
  const std::vector<CheckedTensor> tensors = check_checkpoint(c, ck, dir);
  f.n_files = ck.files().size();
  f.n_tensors = tensors.size();
  uint64_t expert_bytes = 0;
  for (const CheckedTensor& t : tensors) {
    uint64_t n = 1;
    for (int64_t d : t.spec.shape) n *= uint64_t(d);
    f.params += n;
    const uint64_t stored = stored_bytes(t);
    f.bytes += stored;
    if (is_expert_tensor(t.spec.kind)) expert_bytes += stored;
    // A decode step reads every weight once, except the embeddings: one row per token, unless
    // they are tied and also serve as lm_head.
    if (t.spec.kind == TensorKind::embed_tokens && !c.tie_word_embeddings)
      f.decode_bytes += stored / uint64_t(c.vocab_size);
    else
      f.decode_bytes += stored;
    for (const Checkpoint::Entry* e : {t.entry, t.qzeros, t.scales, t.g_idx, t.scale_inv})
      if (e) f.dtypes.insert(dtype_name(e->info->dtype));
    if (is_quantizable_linear(t.spec))
      ++f.n_linear, f.n_quantized += t.format != WeightFormat::dense;
  }
  // A token's forward reads num_experts_per_tok of the num_experts experts of each MoE layer.
  f.moe = c.num_moe_layers() > 0;
  f.active_bytes =
      f.moe ? f.bytes - expert_bytes +
                  expert_bytes / uint64_t(c.num_experts) * uint64_t(c.num_experts_per_tok)
            : f.bytes;
  for (const std::string& d : f.dtypes) f.dtype_list += (f.dtype_list.empty() ? "" : "+") + d;
  f.kv16 = c.kv_bytes_per_token(2), f.kv32 = c.kv_bytes_per_token(4);
  f.stop = stop_info(dir, c);
  return f;
}

void print_info_json(const ModelFacts& f) {
  const ModelConfig& c = f.c;
  const QuantConfig& q = c.quantization_config;
  nlohmann::json j = {
      {"architecture", arch_hf_name(c.arch)},
      {"parameters", f.params},
      {"torch_dtype", c.torch_dtype},
      {"tensor_dtypes", f.dtypes},
      {"weight_bytes", f.bytes},
      {"decode_bytes_per_step", f.decode_bytes},
      {"weight_format", weight_format_json(q)},
      {"quantized_linear_layers", f.n_quantized},
      {"linear_layers", f.n_linear},
      {"files", f.n_files},
      {"tensors", f.n_tensors},
      {"kv_bytes_per_token_bf16", f.kv16},
      {"kv_bytes_per_token_fp32", f.kv32},
      {"config", model_config_to_json(c)},
  };
  if (f.moe)
    j["moe"] = {{"num_experts", c.num_experts},
                {"num_experts_per_tok", c.num_experts_per_tok},
                {"moe_intermediate_size", c.moe_intermediate_size},
                {"norm_topk_prob", c.norm_topk_prob},
                {"moe_layers", c.num_moe_layers()},
                {"active_parameters", c.num_active_parameters()},
                {"active_weight_bytes_per_token", f.active_bytes}};
  if (f.stop.policy)
    j["stop"] = {{"eos_ids", f.stop.policy->eos_ids}, {"sources", f.stop.policy->sources}};
  else
    j["stop"] = {{"error", f.stop.error}};
  std::printf("%s\n", dump_json(j, 2).c_str());
}

void info_line(const char* k, const std::string& v) { std::printf("%-26s %s\n", k, v.c_str()); }

/// The text report's first part: what the weights are and what a step reads.
void print_info_weights(const std::string& dir, const ModelFacts& f) {
  const ModelConfig& c = f.c;
  const uint64_t params = f.params, bytes = f.bytes, decode_bytes = f.decode_bytes,
                 active_bytes = f.active_bytes;
  const bool moe = f.moe;
  auto line = info_line;
  line("model", dir);
  line("architecture", fmt::format("{} ({})", arch_hf_name(c.arch), arch_short_name(c.arch)));
  line("parameters", params >= 1000000000
                         ? fmt::format("{:.2f}B ({})", double(params) / 1e9, params)
                         : fmt::format("{:.2f}M ({})", double(params) / 1e6, params));
  line("dtype", fmt::format("{} (tensors: {})", c.torch_dtype, f.dtype_list));
  line("weight format", weight_format_desc(c.quantization_config, f.n_quantized, f.n_linear));
  line("weights", fmt::format("{} in {} file{} (as stored)", human_bytes(double(bytes)), f.n_files,
                              f.n_files == 1 ? "" : "s"));
  if (moe) {
    const int64_t ap = c.num_active_parameters();
    line("active per token",
         fmt::format("{} of weights, {} parameters", human_bytes(double(active_bytes)),
                     ap >= 1000000000 ? fmt::format("{:.2f}B ({})", double(ap) / 1e9, ap)
                                      : fmt::format("{:.2f}M ({})", double(ap) / 1e6, ap)));
  }
  line("read per decode step",
       fmt::format(
           "{} of weights (as stored; {}{})",
           human_bytes(double(moe ? active_bytes - (bytes - decode_bytes) : decode_bytes)),
           c.tie_word_embeddings ? "the tied embeddings in full, as lm_head"
                                 : "one embedding row per token",
           moe ? "; one token's experts: a step of several rows reads the union of theirs" : ""));
  line("tensors", fmt::format("{} (names, dtypes and shapes match the {} table)", f.n_tensors,
                              arch_short_name(c.arch)));
}

/// The text report's second part: the configuration, the KV cache and the stop ids.
void print_info_config(const ModelFacts& f) {
  const ModelConfig& c = f.c;
  auto line = info_line;
  line("num_hidden_layers", std::to_string(c.num_hidden_layers));
  line("hidden_size", std::to_string(c.hidden_size));
  line("intermediate_size", std::to_string(c.intermediate_size));
  if (f.moe) {
    std::string dense;
    for (int64_t l : c.mlp_only_layers) dense += (dense.empty() ? "" : ", ") + std::to_string(l);
    line("experts", fmt::format("{} per MoE layer, top-{} per token ({}), moe_intermediate_size {}",
                                c.num_experts, c.num_experts_per_tok,
                                c.norm_topk_prob ? "renormalised" : "not renormalised",
                                c.moe_intermediate_size));
    line("MoE layers",
         fmt::format("{} of {} (decoder_sparse_step {}, mlp_only_layers [{}])", c.num_moe_layers(),
                     c.num_hidden_layers, c.decoder_sparse_step, dense));
  }
  line("attention heads", fmt::format("{} query, {} key/value ({} per KV head), head_dim {}",
                                      c.num_attention_heads, c.num_key_value_heads,
                                      c.num_attention_heads / c.num_key_value_heads, c.head_dim));
  line("vocab_size", std::to_string(c.vocab_size));
  line("max_position_embeddings", std::to_string(c.max_position_embeddings));
  line("rope", rope_desc(c));
  std::string flags;
  auto flag = [&](bool on, const char* n) {
    if (on) flags += (flags.empty() ? "" : ", ") + std::string(n);
  };
  flag(c.tie_word_embeddings, "tie_word_embeddings");
  flag(c.attention_bias, "attention_bias");
  flag(c.qk_norm, "qk_norm");
  flag(c.fused_qkv, "fused qkv_proj");
  flag(c.fused_gate_up, "fused gate_up_proj");
  if (c.sliding_window > 0)
    flags += fmt::format("{}sliding_window {}", flags.empty() ? "" : ", ", c.sliding_window);
  line("quirks", flags.empty() ? "none" : flags);
  line("rms_norm_eps", fmt::format("{}", c.rms_norm_eps));
  const int64_t kv16 = f.kv16, kv32 = f.kv32;
  line("KV cache per token", fmt::format("{} B bf16, {} B fp32", kv16, kv32));
  line(
      "KV cache at full context",
      fmt::format("{} bf16, {} fp32", human_bytes(double(kv16) * double(c.max_position_embeddings)),
                  human_bytes(double(kv32) * double(c.max_position_embeddings))));
  std::string eos;
  for (int64_t e : c.eos_token_id) eos += (eos.empty() ? "" : ", ") + std::to_string(e);
  line("bos / eos token ids",
       fmt::format("{} / {}", c.bos_token_id >= 0 ? std::to_string(c.bos_token_id) : "none",
                   eos.empty() ? "none" : eos));
  line("stop ids (generate, run)",
       f.stop.policy ? f.stop.policy->describe() : "cannot be used: " + f.stop.error);
}

void run_info(const std::string& dir, bool as_json) {
  const ModelFacts f = gather_facts(dir);
  if (as_json) return print_info_json(f);
  print_info_weights(dir, f);
  print_info_config(f);
}

}  // namespace

void register_info(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "info", "Describe a model directory (architecture, parameters, bytes, KV cache per token)");
  cmd->add_option("-m,--model", *dir, "Hugging Face model directory")->required();
  cmd->add_flag("--json", *as_json, "print one JSON object");
  cmd->callback([dir, as_json] { run_info(*dir, *as_json); });
}

}  // namespace hogwild::cli
