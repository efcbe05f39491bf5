// `hogwild make-model`: a deterministic random-weight model in Hugging Face format (make_model.h).
#include <cctype>
#include <memory>

#include "apps/hogwild/cli_util.h"
#include "apps/hogwild/commands.h"
#include "core/error.h"
#include "model/make_model.h"

namespace hogwild::cli {

namespace {

// "2GiB", "500MB", "64KiB", "4096" -> bytes.
uint64_t parse_size(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == 0 || i > 15)
    fail("--max-shard-size {}: expected a number of bytes such as 2GiB, 500MB, 4096", s);
  uint64_t n = std::stoull(s.substr(0, i));
  std::string unit = s.substr(i);
  struct U {
    const char* name;
    uint64_t mul;
  };
  for (U u : {U{"", 1}, U{"B", 1}, U{"KB", 1000}, U{"MB", 1000000}, U{"GB", 1000000000},
              U{"KiB", 1ull << 10}, U{"MiB", 1ull << 20}, U{"GiB", 1ull << 30}})
    if (unit == u.name) return n * u.mul;
  fail("--max-shard-size {}: unknown unit '{}'; use B, KB, MB, GB, KiB, MiB or GiB", s, unit);
}

// ", awq int4 group 32" etc. for the summary line.
std::string quant_desc(const QuantConfig& q) {
  switch (q.method) {
    case QuantMethod::none:
      return "";
    case QuantMethod::fp8:
      return fmt::format(", fp8 e4m3 blocks {}x{}", q.block_n, q.block_k);
    default:
      return fmt::format(", {} int4 group {}{}{}", quant_method_name(q.method), q.group_size,
                         q.method == QuantMethod::gptq && !q.sym ? " asym" : "",
                         q.desc_act ? " desc_act" : "");
  }
}

struct Args {
  std::string arch, preset, config, tokenizer, dtype = "bf16", out, max_shard = "2GiB", quant;
  uint64_t seed = 0;
  int64_t group_size = 0;
  bool quiet = false, force = false, desc_act = false, no_sym = false;
};

// The architecture of the model to make: --arch, else --config's own "architectures", else the one
// architecture that has --preset. Throws hogwild::Error for an unknown name, an unreadable config
// or a preset name that several architectures (or none) have.
Arch chosen_arch(const Args& args) {
  if (!args.arch.empty()) return arch_from_short_name(args.arch);
  if (!args.config.empty()) return config_file_arch(args.config);  // the config's own
  Arch arch{};
  int found = 0;
  for (const ModelPreset& p : model_presets())
    if (p.name == args.preset) arch = p.config.arch, ++found;
  if (found != 1)
    fail("make-model: pass --arch (qwen3|qwen2|llama|mistral|phi3|qwen3_moe){}",
         found > 1 ? fmt::format("; preset {} exists for several architectures", args.preset) : "");
  return arch;
}

// The options of make_model from the flags: the preset or config, architecture, --dtype and
// --quant names, --max-shard-size in bytes. Throws hogwild::Error naming the flag whose value is
// unknown.
MakeModelOptions make_model_options(const Args& args) {
  MakeModelOptions o;
  o.preset = args.preset;
  o.config_file = args.config;
  o.arch = chosen_arch(args);
  if (args.dtype == "bf16")
    o.dtype = Dtype::bf16;
  else if (args.dtype == "f16")
    o.dtype = Dtype::f16;
  else if (args.dtype == "f32")
    o.dtype = Dtype::f32;
  else
    fail("--dtype {}: use bf16, f16 or f32", args.dtype);
  o.tokenizer_dir = args.tokenizer;
  o.seed = args.seed;
  o.out_dir = args.out;
  o.max_shard_size = parse_size(args.max_shard);
  o.show_progress = !args.quiet;
  o.force = args.force;
  if (args.quant.empty())
    o.quant = QuantMethod::none;
  else if (args.quant == "awq")
    o.quant = QuantMethod::awq;
  else if (args.quant == "gptq")
    o.quant = QuantMethod::gptq;
  else if (args.quant == "fp8")
    o.quant = QuantMethod::fp8;
  else
    fail("--quant {}: use awq, gptq or fp8", args.quant);
  o.group_size = args.group_size;
  o.desc_act = args.desc_act;
  o.sym = !args.no_sym;
  return o;
}

}  // namespace

void register_make_model(CLI::App& app) {
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "make-model", "Write a deterministic random-weight model in Hugging Face format");
  cmd->add_option(
      "--arch", args->arch,
      "qwen3|qwen2|llama|mistral|phi3|qwen3_moe (implied by --config, or by a preset only one "
      "architecture has)");
  auto* preset = cmd->add_option("--preset", args->preset,
                                 "tiny, tiny-yarn (qwen3), tiny-linear (llama), tiny-dense-layers, "
                                 "tiny-no-norm (qwen3_moe), qwen3-0.6b, qwen3-8b, qwq-32b, "
                                 "llama-3.1-8b, phi-4, qwen3-30b-a3b, qwen3-235b-a22b");
  auto* config = cmd->add_option("--config", args->config, "use the shapes of this config.json");
  preset->excludes(config);
  config->excludes(preset);
  cmd->add_option("--tokenizer", args->tokenizer,
                  "copy tokenizer files from DIR; fit vocab_size and bos/eos ids to them");
  cmd->add_option("--dtype", args->dtype, "bf16|f16|f32 (default bf16)");
  cmd->add_option("--seed", args->seed, "random seed (same seed -> same bytes)")
      ->required()
      ->check(in_range(RequestField::fixed_seed));
  cmd->add_option("--out", args->out, "output directory")->required();
  cmd->add_option("--max-shard-size", args->max_shard,
                  "largest shard (tensor bytes), e.g. 2GiB (default), 100KB");
  cmd->add_option("--quant", args->quant,
                  "store q/k/v/o/gate/up/down as awq (int4 GEMM), gptq (int4) or fp8 (e4m3, "
                  "128x128 block scales); the rest stays --dtype");
  cmd->add_option("--group-size", args->group_size,
                  "awq/gptq input rows per scale (awq 32|64|128, gptq -1 or a multiple of 16; "
                  "default: the largest of 128, 64, 32 that divides every layer)");
  cmd->add_flag("--desc-act", args->desc_act,
                "gptq: act-order (a random input-row permutation per layer, stored in g_idx)");
  cmd->add_flag("--no-sym", args->no_sym, "gptq: asymmetric zero points (default sym, z = 8)");
  cmd->add_flag("-q,--quiet", args->quiet, "no progress lines");
  cmd->add_flag("--force", args->force,
                "write into a non-empty --out, replacing the model files there");
  cmd->callback([args] {
    const MakeModelOptions o = make_model_options(*args);
    ModelConfig c = make_model(o);
    if (!args->quiet)
      std::fprintf(stderr, "made %s: %s, %.3fM parameters, %s%s, seed %llu\n", o.out_dir.c_str(),
                   arch_hf_name(c.arch), double(c.num_parameters()) / 1e6,
                   dtype_torch_name(o.dtype), quant_desc(c.quantization_config).c_str(),
                   (unsigned long long)o.seed);
  });
}

}  // namespace hogwild::cli
