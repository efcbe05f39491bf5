// Element types of safetensors checkpoints and their conversion to fp32.
// bf16 = the upper 16 bits of an IEEE-754 binary32; f16 = IEEE-754 binary16. All conversions are
// pure integer/IEEE arithmetic, so they give the same bits on every machine (make-model relies on
// it).
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

/// Tensor element types hogwild reads and writes (safetensors names "BF16", "F16", "F32").
enum class Dtype { bf16, f16, f32 };

/// Bytes per element: 2, 2, 4.
inline size_t dtype_size(Dtype d) { return d == Dtype::f32 ? 4 : 2; }
/// The safetensors name: "BF16", "F16", "F32".
const char* dtype_name(Dtype d);
/// The HF `torch_dtype` name: "bfloat16", "float16", "float32".
const char* dtype_torch_name(Dtype d);
/// Parses "BF16"/"F16"/"F32"; returns false for any other string (including valid safetensors
/// dtypes hogwild does not read, e.g. "I8", "F64", "F8_E4M3").
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

/// Converts n elements of type `src_type` at `src` (little-endian, any alignment) to fp32.
void convert_to_f32(const void* src, Dtype src_type, size_t n, float* dst);
/// Converts n fp32 values to `dst_type`, writing n*dtype_size(dst_type) bytes.
void convert_from_f32(const float* src, size_t n, Dtype dst_type, void* dst);

}  // namespace hogwild
