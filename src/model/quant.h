// Weight formats of linear layers (docs/ARCHITECTURE.md, "Weight formats"): how a checkpoint stores
// each nn.Linear weight and the one canonical form every backend reads it in. This file is THE
// place that knows the quantized layouts Hugging Face checkpoints use; the loaders (weights.cpp,
// cuda_weights.cpp), `hogwild info` and make-model go through it.
//
// Formats, from config.json `quantization_config` (transformers/utils/quantization_config.py):
// - "awq"  (AutoAWQ GEMM, version "gemm"): per linear `qweight` int32 [in, out/8], `qzeros` int32
//   [in/G, out/8], `scales` fp16 [in/G, out]; eight 4-bit values per int32 in AWQ's interleaved
//   order (AutoAWQ awq/utils/packing_utils.py: pack order AWQ_ORDER [0,2,4,6,1,3,5,7], so nibble i
//   of word j holds column 8j + AWQ_ORDER[i], and column 8j + t sits in nibble
//   kAwqUnpackOrder[t] = AWQ_REVERSE_ORDER[t]); w[o][k] = (q - z) * s with z, s of group k / G.
// - "gptq" (AutoGPTQ / GPTQModel, 4 bits): `qweight` int32 [in/8, out] packed along the input dim
//   (nibble i of word [r][o] is input row 8r + i), `qzeros` int32 [in/G, out/8] packed along out,
//   `scales` fp16 [in/G, out], `g_idx` int32 [in] (group of each input row; not contiguous with
//   desc_act). checkpoint_format "gptq" (v1) stores zeros minus one: z = stored + 1.
// - "fp8" (transformers FineGrainedFP8Config): `weight` F8_E4M3 [out, in], `weight_scale_inv` fp32
//   [ceil(out/bn), ceil(in/bk)] — a multiplier: w = w_fp8 * scale_inv[o / bn][k / bk].
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace hogwild {

/// `quantization_config.quant_method`, as far as hogwild reads it.
enum class QuantMethod { none, awq, gptq, fp8 };

/// config.json `quantization_config`, parsed and checked (parse_quant_config).
struct QuantConfig {
  QuantMethod method = QuantMethod::none;
  int64_t bits = 0;           // awq/gptq: 4
  int64_t group_size = 0;     // awq/gptq: input rows per group; gptq -1 is stored as `in` per layer
  bool zero_point = true;     // awq
  bool sym = true;            // gptq
  bool desc_act = false;      // gptq: act-order, g_idx not contiguous
  bool gptq_v1_zeros = true;  // gptq checkpoint_format "gptq" (zeros stored minus one) vs "gptq_v2"
  int64_t block_n = 0;        // fp8 weight_block_size [block_n, block_k]
  int64_t block_k = 0;
  std::vector<std::string> modules_to_not_convert;  // module name fragments left in bf16/f16/f32
  /// "group_size = 128": fields absent from quantization_config that took transformers' default
  /// (named in the loader's error when the tensors do not match).
  std::vector<std::string> defaulted;
};

/// "none", "awq", "gptq", "fp8" (the config.json quant_method).
const char* quant_method_name(QuantMethod m);

/// How one linear layer's weight is stored.
enum class WeightFormat { dense, int4, fp8 };

/// "dense", "int4", "fp8".
const char* weight_format_name(WeightFormat f);

/// A 4-bit weight in the one form both AWQ and GPTQ become (unpack_awq, unpack_gptq), for a layer
/// y = x W^T with W [out, in]:
///   W[o][perm[j]] = (q(o, j) - zeros[o][j / G]) * scales[o][j / G]
/// q(o, j) = nibble (j % 8) of packed[o * in / 8 + j / 8] (nibble 0 = bits 0..3), values 0..15.
/// perm is empty (identity) unless GPTQ act-order reordered the input rows so that each group is
/// contiguous (a stable sort of g_idx): then column j of the packed matrix is input row perm[j].
struct Int4Weight {
  int64_t out = 0, in = 0, group_size = 0;  // in % 8 == 0, in % group_size == 0
  std::vector<uint32_t> packed;             // (out, in / 8)
  std::vector<float> scales;                // (out, in / G) fp32 (fp16 values, exact)
  std::vector<float> zeros;                 // (out, in / G) the zero point as a float (0..16)
  std::vector<int32_t> perm;                // (in) or empty
};

/// An FP8 block-scaled weight as stored: W[o][k] = e4m3(w[o * in + k]) * scale_inv[o / bn][k / bk].
struct Fp8Weight {
  int64_t out = 0, in = 0, block_n = 0, block_k = 0;
  std::vector<uint8_t> w;        // (out, in) float8_e4m3fn bits
  std::vector<float> scale_inv;  // (ceil(out / bn), ceil(in / bk))
};

/// Parses config.json's `quantization_config` (absent: method none). Throws hogwild::Error naming
/// the field, its value and what is supported, for: an unknown quant_method, bits other than 4,
/// a group size that is not -1 or a positive multiple of 16 (awq: 32/64/128), awq version other
/// than "gemm" or zero_point false, an fp8 fmt other than "e4m3", activation_scheme other than
/// "dynamic", or weight_block_size not two positive ints.
QuantConfig parse_quant_config(const nlohmann::json& config_json);
/// Serialises back to a `quantization_config` object (make-model); null for method none.
nlohmann::json quant_config_to_json(const QuantConfig& q);

/// The format of linear module `module` (HF module name without ".weight", e.g.
/// "model.layers.3.self_attn.q_proj"): dense for method none, for lm_head and embeddings, and
/// for a module named by modules_to_not_convert; else the method's format.
WeightFormat linear_format(const QuantConfig& q, const std::string& module);

/// Output column 8j + t of an AWQ word j sits in nibble kAwqUnpackOrder[t] (bits 4*that..+3):
/// AutoAWQ's AWQ_REVERSE_ORDER, the inverse of the pack order kAwqPackOrder (nibble i holds column
/// 8j + kAwqPackOrder[i]). Source: AutoAWQ awq/utils/packing_utils.py (unpack_awq,
/// reverse_awq_order) and awq/modules/linear/gemm.py (WQLinear_GEMM.from_linear, order_map).
inline constexpr int kAwqUnpackOrder[8] = {0, 4, 1, 5, 2, 6, 3, 7};
inline constexpr int kAwqPackOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};

/// AWQ tensors of one layer -> Int4Weight (no perm). qweight (in, out/8), qzeros (in/G, out/8),
/// scales_f16 (in/G, out) IEEE half bits. Throws hogwild::Error (naming `module`) when out % 8
/// or in % G is not 0.
Int4Weight unpack_awq(const int32_t* qweight, const int32_t* qzeros, const uint16_t* scales_f16,
                      int64_t in, int64_t out, int64_t group_size, const std::string& module);

/// GPTQ tensors of one layer -> Int4Weight. qweight (in/8, out), qzeros (in/G, out/8),
/// scales_f16 (in/G, out), g_idx (in) or null (= k / G). v1_zeros: z = stored + 1 (format v1).
/// With g_idx not equal to k / G the rows are sorted by group (stable) and perm is set; throws
/// hogwild::Error (naming `module`) when a g_idx value is out of range or a group does not hold
/// exactly G rows.
Int4Weight unpack_gptq(const int32_t* qweight, const int32_t* qzeros, const uint16_t* scales_f16,
                       const int32_t* g_idx, int64_t in, int64_t out, int64_t group_size,
                       bool v1_zeros, const std::string& module);

/// unpack_awq / unpack_gptq with the scales already in fp32 (from F16 or BF16 `scales` tensors;
/// read_int4 uses these). Same shapes and errors.
Int4Weight unpack_awq(const int32_t* qweight, const int32_t* qzeros, const float* scales,
                      int64_t in, int64_t out, int64_t group_size, const std::string& module);
Int4Weight unpack_gptq(const int32_t* qweight, const int32_t* qzeros, const float* scales,
                       const int32_t* g_idx, int64_t in, int64_t out, int64_t group_size,
                       bool v1_zeros, const std::string& module);

/// The group size of a layer with `in` input rows: q.group_size, or `in` for GPTQ's -1.
int64_t layer_group_size(const QuantConfig& q, int64_t in);

/// W (out, in) fp32 row-major from an Int4Weight: (q - z) * s, one fp32 multiply per element.
void dequantize(const Int4Weight& w, float* dst);
/// W (out, in) fp32 row-major from an Fp8Weight: e4m3 value * scale_inv, one fp32 multiply.
void dequantize(const Fp8Weight& w, float* dst);

/// The tensors of one AWQ GEMM layer as AutoAWQ writes them (the inverse of unpack_awq).
struct AwqTensors {
  int64_t in = 0, out = 0, group_size = 0;
  std::vector<int32_t> qweight;  // (in, out / 8): nibble i of [k][j]: column 8j + kAwqPackOrder[i]
  std::vector<int32_t> qzeros;   // (in / G, out / 8): the zero points, packed like qweight
  std::vector<uint16_t> scales;  // (in / G, out) IEEE half bits
};

/// The tensors of one GPTQ layer as AutoGPTQ / GPTQModel write them (the inverse of unpack_gptq).
struct GptqTensors {
  int64_t in = 0, out = 0, group_size = 0;
  std::vector<int32_t> qweight;  // (in / 8, out): nibble i of word [r][o] = input row 8r + i
  std::vector<int32_t> qzeros;   // (in / G, out / 8): nibble i of [g][c] = column 8c + i; v1: z - 1
  std::vector<uint16_t> scales;  // (in / G, out) IEEE half bits
  std::vector<int32_t> g_idx;    // (in): the group of each input row
};

/// Int4Weight -> AWQ tensors. The inverse of unpack_awq (AutoAWQ awq/modules/linear/gemm.py
/// WQLinear_GEMM.from_linear packs intweight and zeros with order_map [0, 2, 4, 6, 1, 3, 5, 7]:
/// nibble i of a word holds column 8j + order_map[i]). Throws hogwild::Error when w has a perm
/// (AWQ has no act-order), a zero point is not an integer in 0..15, a scale is not exactly an
/// fp16 value, or the shape does not fit (in, out multiples of 8, G dividing in).
AwqTensors pack_awq(const Int4Weight& w, const std::string& module);

/// Int4Weight -> GPTQ tensors. The inverse of unpack_gptq (AutoGPTQ
/// auto_gptq/nn_modules/qlinear/qlinear_cuda_old.py QuantLinear.pack): qweight packed along the
/// input dim in input-row order; g_idx[perm[j]] = j / G (identity perm: k / G); qzeros packed along
/// out, storing z - 1 when v1_zeros (checkpoint_format "gptq": QuantLinear.pack does
/// `zeros -= 1` before packing, GPTQModel gptqmodel/utils/model.py convert_gptq_v1_to_v2_format
/// undoes it) or z (gptq_v2). Throws hogwild::Error when a zero point is not an integer in 1..16
/// (v1) / 0..15 (v2), a scale is not an fp16 value, or the shape does not fit.
GptqTensors pack_gptq(const Int4Weight& w, bool v1_zeros, const std::string& module);

/// Round-to-nearest 4-bit quantization of W (out, in) fp32 row-major into the canonical form, per
/// output row and group of G input rows (group g = the rows perm[g*G .. g*G+G-1], or k / G with an
/// empty perm; perm is copied into the result). Scales are rounded up to an fp16 value first
/// (so every weight is within s / 2 of its level, unless min_zero raised z), then
/// q = clamp(round(w / s) + z, 0, 15):
/// - asym: xmin = min(group min, 0), xmax = max(group max, 0), s = (xmax - xmin) / 15 (at least
///   1e-5), z = clamp(round(-xmin / s), min_zero, 15) (AutoAWQ awq/quantize/quantizer.py
///   pseudo_quantize_tensor, AutoGPTQ auto_gptq/quantization/quantizer.py Quantizer.find_params);
///   min_zero = 1 for GPTQ v1, whose stored z - 1 cannot be negative.
/// - sym: s = 2 * max|w| / 15 (at least 1e-5), z = 8 (Quantizer.find_params with sym).
/// Throws hogwild::Error when the shape does not fit or perm is not a permutation of 0..in-1.
Int4Weight quantize_int4(const float* W, int64_t out, int64_t in, int64_t group_size, bool sym,
                         const std::vector<int32_t>& perm, int min_zero = 0);

/// Block-scaled FP8 quantization of W (out, in) fp32 row-major: per (block_n, block_k) tile
/// (partial at the edges) scale_inv = max|w| / 448 (1 for an all-zero tile) and
/// w_fp8 = f32_to_fp8_e4m3(w / scale_inv) (transformers quantizers/quantizer_finegrained_fp8.py,
/// Fp8Quantize). Throws hogwild::Error for non-positive sizes.
Fp8Weight quantize_fp8(const float* W, int64_t out, int64_t in, int64_t block_n, int64_t block_k);

/// float8_e4m3fn bits -> fp32 (exact; 0x7f / 0xff are NaN, no infinities).
float fp8_e4m3_to_f32(uint8_t b);
/// fp32 -> float8_e4m3fn, round-to-nearest-even, saturating to +-448 (as torch's .to()).
uint8_t f32_to_fp8_e4m3(float f);

}  // namespace hogwild
