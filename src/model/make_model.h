// Deterministic random-weight models in Hugging Face format (`hogwild make-model`), for tests,
// benchmarks and checking this engine against transformers without downloading weights.
//
// Determinism: every value comes from a counter-based generator — element e of tensor T is
// splitmix64(key(seed, T) + e * golden-gamma) with key = splitmix64(seed ^ fnv1a64(T's HF name)) —
// turned into an approximately normal value by integer arithmetic only (Irwin-Hall: the sum of the
// four 16-bit words minus their mean, scaled to unit variance; bounded at +-3.46 sigma), then one
// IEEE multiply by the std and one rounding to the file dtype. No std:: distributions or libm
// calls, so the same seed gives the same bytes on any machine and any thread count.
//
// Initialisation follows transformers' _init_weights (normal(0, initializer_range) for matrices,
// ones for RMSNorm weights, zeros for biases) with two deliberate changes for the tiny test presets
// so that tests can see mistakes: norms are 1 + normal(0, norm_jitter) and biases
// normal(0, bias_std) — a loader or forward that drops or swaps a norm or bias changes the logits.
// Tiny presets use std 0.1 (instead of 0.02) so that with hidden_size 64 the logits spread by ~1
// rather than ~0.16: greedy decoding is then not decided by near-ties.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/dtype.h"
#include "model/weights.h"

namespace hogwild {

/// A named model shape (`--preset`).
struct ModelPreset {
  std::string name;        // "tiny", "qwen3-0.6b", ...
  ModelConfig config;      // config.arch is the preset's architecture
  double init_std = 0.02;  // std of matrix entries (HF initializer_range)
  double norm_jitter = 0;  // norm weights = 1 + normal(0, norm_jitter)
  double bias_std = 0;     // attention biases = normal(0, bias_std)
};

/// Every preset: "tiny" for each architecture (and "tiny-yarn" qwen3, "tiny-linear" llama,
/// "tiny-dense-layers" and "tiny-no-norm" qwen3_moe), and the real shapes qwen3-0.6b, qwen3-8b,
/// qwq-32b (qwen2), llama-3.1-8b, phi-4 (phi3), qwen3-30b-a3b and qwen3-235b-a22b (qwen3_moe).
const std::vector<ModelPreset>& model_presets();
/// The first preset named `name`, whatever its architecture (the real shapes' names are unique;
/// "tiny" is the qwen3 one): what the benchmarks' -p takes. Throws hogwild::Error listing the
/// presets when there is none.
const ModelPreset& preset_named(const std::string& name);
/// The preset `name` for `arch`. Throws hogwild::Error listing the presets when unknown, or when
/// the preset belongs to another architecture (saying which --arch to use).
ModelPreset find_preset(Arch arch, const std::string& name);

struct MakeModelOptions {
  Arch arch = Arch::qwen3;
  std::string preset;       // one of preset / config_file
  std::string config_file;  // an HF config.json whose shapes to use (architectures must match arch)
  std::string tokenizer_dir;  // optional: copy tokenizer files, fit vocab_size and bos/eos ids
  Dtype dtype = Dtype::bf16;  // dtype of the written tensors
  uint64_t seed = 0;
  std::string out_dir;
  uint64_t max_shard_size = 2ull << 30;  // bytes of tensor data per shard file
  bool show_progress = true;             // one line per written file on stderr
  bool force = false;  // out_dir may hold files: the model files listed in make_model() go first
  // Quantized linear layers (model/quant.h, `--quant`): q/k/v/o and gate/up/down (Phi3's fused
  // qkv_proj / gate_up_proj as one layer) are stored in this format; embeddings, lm_head, norms
  // and biases stay dense in `dtype`. See make_model().
  QuantMethod quant = QuantMethod::none;
  int64_t group_size = 0;  // awq/gptq; 0: the largest of 128, 64, 32 dividing every layer's input
  bool desc_act = false;   // gptq: act-order, a random permutation per layer behind g_idx
  bool sym = true;         // gptq: symmetric (z = 8); false: asymmetric zero points
};

/// The quantization_config make-model writes for `opt` on model c (method none without --quant):
/// AWQ GEMM {bits 4, group_size, zero_point true, version "gemm"}; GPTQ {bits 4, group_size,
/// desc_act, sym, checkpoint_format "gptq" (v1)}; FP8 {fmt e4m3, activation_scheme dynamic,
/// weight_block_size [128, 128]}. Throws hogwild::Error saying what to change for a flag that does
/// not apply to the method (group size / desc_act / sym with fp8, desc_act or asym choice with
/// awq), and for a group size that is not supported or does not divide the in_features of every
/// quantized layer (the message names the layer and the sizes that fit).
QuantConfig make_model_quant_config(const MakeModelOptions& opt, const ModelConfig& c);

/// Writes out_dir/{config.json, generation_config.json, model.safetensors | model-0000i-of-0000n.
/// safetensors + model.safetensors.index.json} (and the tokenizer files). Creates out_dir if
/// needed. A non-empty out_dir is refused unless `force`; then the files of a model directory
/// (config.json, generation_config.json, the weights and index, tokenizer.json,
/// tokenizer_config.json, chat_template.jinja, special_tokens_map.json) are removed first, so that
/// no old file (a tokenizer that no longer fits vocab_size) stays beside the new model. Returns the
/// config written. Throws hogwild::Error on bad options or I/O failure.
/// With opt.quant, each quantized layer's fp32 random values (the ones a dense model of the same
/// seed holds) are quantized by round to nearest (quant.h quantize_int4 / quantize_fp8) and
/// written as the format's tensors (pack_awq: qweight, qzeros, scales F16; pack_gptq: qweight,
/// qzeros, scales F16, g_idx; fp8: weight F8_E4M3, weight_scale_inv F32). GPTQ desc_act's
/// permutation is deterministic per seed and layer name.
ModelConfig make_model(const MakeModelOptions& opt);

/// The architecture an HF config.json names (its "architectures"[0]), for `make-model --config`
/// without --arch. Throws hogwild::Error naming the file when it cannot be read or parsed.
Arch config_file_arch(const std::string& path);

/// The weights `make-model --dtype f32 --seed seed` writes for preset p, made in memory (as
/// load_model would return them from those files; config.torch_dtype "float32"), on up to 16
/// threads. For benchmarks that need a model's shape, not its files.
ModelWeights make_model_weights(const ModelPreset& p, uint64_t seed = 0);

/// Fills `out` (n values) with the deterministic approximately-normal values of tensor `name`,
/// element offset `first`, times `stdev`, plus `mean` (described above).
void random_tensor_values(uint64_t seed, const std::string& name, uint64_t first, size_t n,
                          double mean, double stdev, float* out);

/// Vocabulary size a tokenizer.json needs: 1 + the largest id in model.vocab and added_tokens.
/// Throws hogwild::Error when the file is missing or malformed.
int64_t tokenizer_vocab_size(const std::string& tokenizer_json_path);

}  // namespace hogwild
