// Element types of safetensors checkpoints and their conversion to fp32.
// bf16 = the upper 16 bits of an IEEE-754 binary32; f16 = IEEE-754 binary16. i32 and f8_e4m3 are
// the stored pieces of quantized linear layers (model/quant.h: AWQ/GPTQ qweight, qzeros, g_idx;
// FP8 weights): they are never a dense tensor, so the fp32 conversions refuse them. All conversions
// are pure integer/IEEE arithmetic, so they give the same bits on every machine (make-model relies
// on it).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

static_assert(
    std::endian::native == std::endian::little,
    "hogwild reads little-endian safetensors files in place; big-endian hosts are not supported");

namespace hogwild {

/// Tensor element types hogwild reads and writes (safetensors names "BF16", "F16", "F32", "I32",
/// "F8_E4M3"). i32 and f8_e4m3 occur only as the pieces of quantized layers (model/quant.h).
enum class Dtype { bf16, f16, f32, i32, f8_e4m3 };

/// Bytes per element: 2, 2, 4, 4, 1.
inline size_t dtype_size(Dtype d) {
  switch (d) {
    case Dtype::f32:
    case Dtype::i32:
      return 4;
    case Dtype::f8_e4m3:
      return 1;
    default:
      return 2;
  }
}
/// True for bf16, f16, f32: the dtypes a dense tensor may have (convert_to_f32 reads them).
inline bool dtype_is_float(Dtype d) {
  return d == Dtype::bf16 || d == Dtype::f16 || d == Dtype::f32;
}
/// The safetensors name: "BF16", "F16", "F32", "I32", "F8_E4M3".
const char* dtype_name(Dtype d);
/// The torch name: "bfloat16", "float16", "float32", "int32", "float8_e4m3fn".
const char* dtype_torch_name(Dtype d);
/// Parses "BF16"/"F16"/"F32"/"I32"/"F8_E4M3"; returns false for any other string (including valid
/// safetensors dtypes hogwild does not read, e.g. "I8", "F64", "F8_E5M2").
bool dtype_from_name(const std::string& s, Dtype* out);

inline float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

/// Round-to-nearest-even, as torch's `tensor.to(torch.bfloat16)`; NaN stays a (quiet) NaN.
inline uint16_t f32_to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

/// IEEE binary16 -> binary32, exact (subnormals, inf and NaN included).
float f16_to_f32(uint16_t h);
/// IEEE binary32 -> binary16, round-to-nearest-even, overflow to inf.
uint16_t f32_to_f16(float f);

/// Converts n elements of type `src_type` (bf16, f16 or f32) at `src` (little-endian, any
/// alignment) to fp32. Throws hogwild::Error for i32 and f8_e4m3, which are not dense values
/// (a quantized layer goes through model/quant.h).
void convert_to_f32(const void* src, Dtype src_type, size_t n, float* dst);
/// Converts n fp32 values to `dst_type` (bf16, f16 or f32), writing n*dtype_size(dst_type) bytes.
/// Throws hogwild::Error for i32 and f8_e4m3.
void convert_from_f32(const float* src, size_t n, Dtype dst_type, void* dst);

}  // namespace hogwild
