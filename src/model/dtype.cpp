#include "model/dtype.h"

#include "core/error.h"

namespace hogwild {

const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::bf16:
      return "BF16";
    case Dtype::f16:
      return "F16";
    case Dtype::f32:
      return "F32";
    case Dtype::i32:
      return "I32";
    case Dtype::f8_e4m3:
      return "F8_E4M3";
  }
  return "?";
}

const char* dtype_torch_name(Dtype d) {
  switch (d) {
    case Dtype::bf16:
      return "bfloat16";
    case Dtype::f16:
      return "float16";
    case Dtype::f32:
      return "float32";
    case Dtype::i32:
      return "int32";
    case Dtype::f8_e4m3:
      return "float8_e4m3fn";
  }
  return "?";
}

bool dtype_from_name(const std::string& s, Dtype* out) {
  if (s == "BF16")
    *out = Dtype::bf16;
  else if (s == "F16")
    *out = Dtype::f16;
  else if (s == "F32")
    *out = Dtype::f32;
  else if (s == "I32")
    *out = Dtype::i32;
  else if (s == "F8_E4M3")
    *out = Dtype::f8_e4m3;
  else
    return false;
  return true;
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);  // inf / NaN
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);  // normal: rebias 15 -> 127
  } else if (man == 0) {
    bits = sign;  // +-0
  } else {
    // Subnormal: value = man * 2^-24; normalise the mantissa.
    int e = -1;
    do {
      man <<= 1;
      ++e;
    } while ((man & 0x400u) == 0);
    bits = sign | (uint32_t(113 - 1 - e) << 23) | ((man & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t f32_to_f16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (a >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds to inf
  if (a < 0x38800000u) {
    // Result is subnormal or zero: value / 2^-24 rounded to nearest even.
    if (a < 0x33000000u) return sign;  // < 2^-25: rounds to 0
    uint32_t exp = a >> 23;
    uint32_t man = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exp;  // so that man >> shift = value * 2^24
    uint32_t r = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return sign | uint16_t(r);
  }
  uint32_t r = a - 0x38000000u;  // rebias exponent 127 -> 15 (in the upper bits)
  r += 0xfffu + ((r >> 13) & 1u);
  return sign | uint16_t(r >> 13);
}

namespace {
[[noreturn]] void not_dense(Dtype d) {
  fail(
      "a {} tensor holds no dense values (it is a piece of an AWQ/GPTQ/FP8 layer); a dense weight "
      "must be BF16, F16 or F32",
      dtype_name(d));
}
}  // namespace

void convert_to_f32(const void* src, Dtype src_type, size_t n, float* dst) {
  const auto* p = static_cast<const unsigned char*>(src);
  switch (src_type) {
    case Dtype::i32:
    case Dtype::f8_e4m3:
      not_dense(src_type);
    case Dtype::f32:
      std::memcpy(dst, p, n * 4);
      break;
    case Dtype::bf16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        dst[i] = bf16_to_f32(h);
      }
      break;
    case Dtype::f16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        dst[i] = f16_to_f32(h);
      }
      break;
  }
}

void convert_from_f32(const float* src, size_t n, Dtype dst_type, void* dst) {
  auto* p = static_cast<unsigned char*>(dst);
  switch (dst_type) {
    case Dtype::i32:
    case Dtype::f8_e4m3:
      not_dense(dst_type);
    case Dtype::f32:
      std::memcpy(p, src, n * 4);
      break;
    case Dtype::bf16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h = f32_to_bf16(src[i]);
        std::memcpy(p + 2 * i, &h, 2);
      }
      break;
    case Dtype::f16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h = f32_to_f16(src[i]);
        std::memcpy(p + 2 * i, &h, 2);
      }
      break;
  }
}

}  // namespace hogwild
