// Weights of linear layers in their quantized formats (model/quant.h): AWQ/GPTQ int4 unpacking
// into the canonical Int4Weight and packing back, int4 and FP8 quantization, FP8 e4m3
// conversion, dequantization to fp32. (quantization_config itself: quant_config.cpp.)
// Sources (cited per function): AutoAWQ awq/utils/packing_utils.py and awq/modules/linear/gemm.py;
// AutoGPTQ auto_gptq/nn_modules/qlinear (pack, dequantize) and GPTQModel gptqmodel/utils/model.py
// (convert_gptq_v1_to_v2_format); transformers quantizers/quantizer_finegrained_fp8.py;
// c10/util/Float8_e4m3fn.h (torch float8_e4m3fn).
#include "model/quant.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "model/dtype.h"

namespace hogwild {

namespace {

uint32_t nibble(uint32_t word, int i) { return (word >> (4 * i)) & 15u; }

void check_int4_shape(int64_t in, int64_t out, int64_t g, const std::string& module) {
  if (in <= 0 || out <= 0 || g <= 0 || in % 8 != 0 || out % 8 != 0 || in % g != 0)
    fail(
        "{}: a 4-bit layer needs in_features ({}) and out_features ({}) multiples of 8 and a "
        "group size ({}) dividing in_features; the checkpoint does not fit its config",
        module, in, out, g);
}

std::vector<float> f16_scales(const uint16_t* s, size_t n) {
  std::vector<float> f(n);
  for (size_t i = 0; i < n; ++i) f[i] = f16_to_f32(s[i]);
  return f;
}

}  // namespace

Int4Weight unpack_awq(const int32_t* qweight, const int32_t* qzeros, const float* scales,
                      int64_t in, int64_t out, int64_t group_size, const std::string& module) {
  // AutoAWQ packing_utils.py dequantize_gemm: unpack_awq (nibble i = bits 4i..4i+3), then
  // reverse_awq_order (column 8j + t = nibble AWQ_REVERSE_ORDER[t]); w = (q - z) * s per group.
  check_int4_shape(in, out, group_size, module);
  Int4Weight w;
  w.out = out, w.in = in, w.group_size = group_size;
  const int64_t ng = in / group_size, ow = out / 8, iw = in / 8;
  w.packed.assign(size_t(out * iw), 0u);
  for (int64_t k = 0; k < in; ++k)
    for (int64_t o = 0; o < out; ++o) {
      const uint32_t word = uint32_t(qweight[k * ow + o / 8]);
      const uint32_t q = nibble(word, kAwqUnpackOrder[o % 8]);
      w.packed[size_t(o * iw + k / 8)] |= q << (4 * (k % 8));
    }
  w.scales.resize(size_t(out * ng));
  w.zeros.resize(size_t(out * ng));
  for (int64_t g = 0; g < ng; ++g)
    for (int64_t o = 0; o < out; ++o) {
      const uint32_t zword = uint32_t(qzeros[g * ow + o / 8]);
      w.zeros[size_t(o * ng + g)] = float(nibble(zword, kAwqUnpackOrder[o % 8]));
      w.scales[size_t(o * ng + g)] = scales[g * out + o];
    }
  return w;
}

Int4Weight unpack_awq(const int32_t* qweight, const int32_t* qzeros, const uint16_t* scales_f16,
                      int64_t in, int64_t out, int64_t group_size, const std::string& module) {
  check_int4_shape(in, out, group_size, module);
  const std::vector<float> s = f16_scales(scales_f16, size_t(in / group_size * out));
  return unpack_awq(qweight, qzeros, s.data(), in, out, group_size, module);
}

Int4Weight unpack_gptq(const int32_t* qweight, const int32_t* qzeros, const float* scales,
                       const int32_t* g_idx, int64_t in, int64_t out, int64_t group_size,
                       bool v1_zeros, const std::string& module) {
  // AutoGPTQ/GPTQModel QuantLinear.pack: qweight[r][o] nibble i = input row 8r + i, qzeros[g][c]
  // nibble i = output column 8c + i; dequantize: w[k] = (q[k] - z[g_idx[k]]) * s[g_idx[k]].
  // Format v1 ("gptq") stored z - 1 (GPTQModel gptqmodel/utils/model.py
  // convert_gptq_v1_to_v2_format: "v1 checkpoint format used to do `qzeros -= 1` before
  // serialization"; AutoGPTQ PR #559/#603 added checkpoint_format), so z = stored + 1 there.
  check_int4_shape(in, out, group_size, module);
  const int64_t ng = in / group_size, ow = out / 8, iw = in / 8;
  Int4Weight w;
  w.out = out, w.in = in, w.group_size = group_size;
  // The column order: rows sorted by group (stable), unless g_idx is absent or k / G already.
  std::vector<int32_t> perm;
  if (g_idx) {
    std::vector<int64_t> count(size_t(ng), 0);
    bool trivial = true;
    for (int64_t k = 0; k < in; ++k) {
      const int32_t g = g_idx[k];
      if (g < 0 || g >= ng)
        fail(
            "{}: g_idx[{}] = {} is outside the {} groups of {} rows; the checkpoint is corrupt "
            "or does not match group_size {}",
            module, k, g, ng, group_size, group_size);
      ++count[size_t(g)];
      trivial = trivial && g == k / group_size;
    }
    for (int64_t g = 0; g < ng; ++g)
      if (count[size_t(g)] != group_size)
        fail(
            "{}: g_idx puts {} rows in group {}, expected group_size {}; the checkpoint is "
            "corrupt or does not match its quantization_config",
            module, count[size_t(g)], g, group_size);
    if (!trivial) {
      perm.resize(size_t(in));
      for (int64_t k = 0; k < in; ++k) perm[size_t(k)] = int32_t(k);
      std::stable_sort(perm.begin(), perm.end(),
                       [&](int32_t a, int32_t b) { return g_idx[a] < g_idx[b]; });
    }
  }
  w.packed.assign(size_t(out * iw), 0u);
  for (int64_t j = 0; j < in; ++j) {
    const int64_t k = perm.empty() ? j : perm[size_t(j)];
    for (int64_t o = 0; o < out; ++o) {
      const uint32_t q = nibble(uint32_t(qweight[(k / 8) * out + o]), int(k % 8));
      w.packed[size_t(o * iw + j / 8)] |= q << (4 * (j % 8));
    }
  }
  w.scales.resize(size_t(out * ng));
  w.zeros.resize(size_t(out * ng));
  for (int64_t g = 0; g < ng; ++g)
    for (int64_t o = 0; o < out; ++o) {
      const uint32_t z = nibble(uint32_t(qzeros[g * ow + o / 8]), int(o % 8));
      w.zeros[size_t(o * ng + g)] = float(z) + (v1_zeros ? 1.0f : 0.0f);
      w.scales[size_t(o * ng + g)] = scales[g * out + o];
    }
  w.perm = std::move(perm);
  return w;
}

Int4Weight unpack_gptq(const int32_t* qweight, const int32_t* qzeros, const uint16_t* scales_f16,
                       const int32_t* g_idx, int64_t in, int64_t out, int64_t group_size,
                       bool v1_zeros, const std::string& module) {
  check_int4_shape(in, out, group_size, module);
  const std::vector<float> s = f16_scales(scales_f16, size_t(in / group_size * out));
  return unpack_gptq(qweight, qzeros, s.data(), g_idx, in, out, group_size, v1_zeros, module);
}

void dequantize(const Int4Weight& w, float* dst) {
  const int64_t iw = w.in / 8, ng = w.in / w.group_size;
  for (int64_t o = 0; o < w.out; ++o) {
    const uint32_t* row = w.packed.data() + o * iw;
    const float* s = w.scales.data() + o * ng;
    const float* z = w.zeros.data() + o * ng;
    float* d = dst + o * w.in;
    for (int64_t j = 0; j < w.in; ++j) {
      const int64_t g = j / w.group_size;
      const float q = float(nibble(row[j / 8], int(j % 8)));
      d[w.perm.empty() ? j : w.perm[size_t(j)]] = (q - z[g]) * s[g];  // q - z is exact
    }
  }
}

void dequantize(const Fp8Weight& w, float* dst) {
  // transformers integrations/finegrained_fp8.py Fp8Dequantize: w.to(float32) * scale_inv of its
  // (block_n, block_k) tile, broadcast; the last tiles may be partial (FP8Linear sizes the scales
  // with ceil division).
  float lut[256];
  for (int b = 0; b < 256; ++b) lut[b] = fp8_e4m3_to_f32(uint8_t(b));
  const int64_t nk = (w.in + w.block_k - 1) / w.block_k;
  for (int64_t o = 0; o < w.out; ++o) {
    const float* s = w.scale_inv.data() + (o / w.block_n) * nk;
    const uint8_t* src = w.w.data() + o * w.in;
    float* d = dst + o * w.in;
    for (int64_t k = 0; k < w.in; ++k) d[k] = lut[src[k]] * s[k / w.block_k];
  }
}

namespace {

// The fp16 bits of each scale of w, refusing a scale that fp16 does not hold exactly (the packed
// checkpoint would then define another weight).
std::vector<uint16_t> f16_scale_bits(const Int4Weight& w, const std::string& module) {
  const int64_t ng = w.in / w.group_size;
  std::vector<uint16_t> s(size_t(w.out * ng));
  for (int64_t g = 0; g < ng; ++g)
    for (int64_t o = 0; o < w.out; ++o) {
      const float v = w.scales[size_t(o * ng + g)];
      const uint16_t h = f32_to_f16(v);
      if (!(f16_to_f32(h) == v))
        fail("{}: scale {} (output {}, group {}) is not an fp16 value; round the scales to fp16",
             module, v, o, g);
      s[size_t(g * w.out + o)] = h;
    }
  return s;
}

// The zero point of (o, g) as an integer in lo..hi.
uint32_t int_zero(const Int4Weight& w, int64_t o, int64_t g, int lo, int hi,
                  const std::string& module, const char* what) {
  const float z = w.zeros[size_t(o * (w.in / w.group_size) + g)];
  if (!(z >= float(lo) && z <= float(hi) && z == std::floor(z)))
    fail(
        "{}: zero point {} (output {}, group {}) cannot be stored {}; it must be an integer in "
        "{}..{}",
        module, z, o, g, what, lo, hi);
  return uint32_t(z);
}

// The smallest fp16 value >= s (s positive and below the fp16 maximum): a scale rounded up keeps
// the group's extremes within the 16 levels, so round to nearest stays within half a step.
float f16_at_least(float s) {
  uint16_t h = f32_to_f16(s);
  if (f16_to_f32(h) < s) ++h;
  return f16_to_f32(h);
}

void check_canonical(const Int4Weight& w, const std::string& module) {
  check_int4_shape(w.in, w.out, w.group_size, module);
  const size_t ng = size_t(w.in / w.group_size);
  if (w.packed.size() != size_t(w.out * w.in / 8) || w.scales.size() != size_t(w.out) * ng ||
      w.zeros.size() != size_t(w.out) * ng || (!w.perm.empty() && w.perm.size() != size_t(w.in)))
    fail("{}: Int4Weight sizes do not match [{}, {}] with group size {}", module, w.out, w.in,
         w.group_size);
}

}  // namespace

AwqTensors pack_awq(const Int4Weight& w, const std::string& module) {
  // AutoAWQ awq/modules/linear/gemm.py WQLinear_GEMM.from_linear: intweight [in, out]; word
  // [k][j] |= intweight[k][8j + order_map[i]] << 4i, order_map = [0, 2, 4, 6, 1, 3, 5, 7]; the
  // zero points [in/G, out] are packed the same way; scales [in/G, out] fp16.
  check_canonical(w, module);
  if (!w.perm.empty())
    fail("{}: AWQ stores no act-order permutation; quantize without one (or write GPTQ)", module);
  const int64_t in = w.in, out = w.out, G = w.group_size, ng = in / G, ow = out / 8, iw = in / 8;
  AwqTensors t;
  t.in = in, t.out = out, t.group_size = G;
  t.qweight.assign(size_t(in * ow), 0);
  for (int64_t k = 0; k < in; ++k)
    for (int64_t j = 0; j < ow; ++j) {
      uint32_t word = 0;
      for (int i = 0; i < 8; ++i) {
        const int64_t o = 8 * j + kAwqPackOrder[i];
        word |= nibble(w.packed[size_t(o * iw + k / 8)], int(k % 8)) << (4 * i);
      }
      t.qweight[size_t(k * ow + j)] = int32_t(word);
    }
  t.qzeros.assign(size_t(ng * ow), 0);
  for (int64_t g = 0; g < ng; ++g)
    for (int64_t j = 0; j < ow; ++j) {
      uint32_t word = 0;
      for (int i = 0; i < 8; ++i)
        word |= int_zero(w, 8 * j + kAwqPackOrder[i], g, 0, 15, module, "in AWQ's 4 bits")
                << (4 * i);
      t.qzeros[size_t(g * ow + j)] = int32_t(word);
    }
  t.scales = f16_scale_bits(w, module);
  return t;
}

GptqTensors pack_gptq(const Int4Weight& w, bool v1_zeros, const std::string& module) {
  // AutoGPTQ qlinear_cuda_old.py QuantLinear.pack: intweight [in, out] in input-row order (row k
  // quantized with the scale and zero of g_idx[k]); qweight[r][o] |= intweight[8r + i][o] << 4i;
  // zeros -= 1 (format v1), qzeros[g][c] |= zeros[g][8c + i] << 4i.
  check_canonical(w, module);
  const int64_t in = w.in, out = w.out, G = w.group_size, ng = in / G, ow = out / 8, iw = in / 8;
  GptqTensors t;
  t.in = in, t.out = out, t.group_size = G;
  t.g_idx.resize(size_t(in));
  std::vector<int64_t> col(static_cast<size_t>(in));  // packed column of input row k
  for (int64_t j = 0; j < in; ++j) {
    const int64_t k = w.perm.empty() ? j : w.perm[size_t(j)];
    if (k < 0 || k >= in) fail("{}: perm[{}] = {} is not an input row", module, j, k);
    col[size_t(k)] = j;
    t.g_idx[size_t(k)] = int32_t(j / G);
  }
  t.qweight.assign(size_t(iw * out), 0);
  for (int64_t r = 0; r < iw; ++r)
    for (int64_t o = 0; o < out; ++o) {
      uint32_t word = 0;
      for (int i = 0; i < 8; ++i) {
        const int64_t j = col[size_t(8 * r + i)];
        word |= nibble(w.packed[size_t(o * iw + j / 8)], int(j % 8)) << (4 * i);
      }
      t.qweight[size_t(r * out + o)] = int32_t(word);
    }
  t.qzeros.assign(size_t(ng * ow), 0);
  const int lo = v1_zeros ? 1 : 0, hi = v1_zeros ? 16 : 15;
  for (int64_t g = 0; g < ng; ++g)
    for (int64_t c = 0; c < ow; ++c) {
      uint32_t word = 0;
      for (int i = 0; i < 8; ++i) {
        const uint32_t z = int_zero(w, 8 * c + i, g, lo, hi, module,
                                    v1_zeros ? "as GPTQ v1's z - 1" : "in GPTQ's 4 bits");
        word |= (z - uint32_t(lo)) << (4 * i);
      }
      t.qzeros[size_t(g * ow + c)] = int32_t(word);
    }
  t.scales = f16_scale_bits(w, module);
  return t;
}

Int4Weight quantize_int4(const float* W, int64_t out, int64_t in, int64_t group_size, bool sym,
                         const std::vector<int32_t>& perm, int min_zero) {
  check_int4_shape(in, out, group_size, "quantize_int4");
  if (!perm.empty()) {
    std::vector<char> seen(size_t(in), 0);
    bool ok = perm.size() == size_t(in);
    for (size_t j = 0; ok && j < perm.size(); ++j) {
      ok = perm[j] >= 0 && perm[j] < in && !seen[size_t(perm[j])];
      if (ok) seen[size_t(perm[j])] = 1;
    }
    if (!ok) fail("quantize_int4: perm is not a permutation of the {} input rows", in);
  }
  const int64_t G = group_size, ng = in / G, iw = in / 8;
  Int4Weight w;
  w.out = out, w.in = in, w.group_size = G, w.perm = perm;
  w.packed.assign(size_t(out * iw), 0u);
  w.scales.resize(size_t(out * ng));
  w.zeros.resize(size_t(out * ng));
  auto row_of = [&](int64_t j) { return perm.empty() ? j : int64_t(perm[size_t(j)]); };
  for (int64_t o = 0; o < out; ++o) {
    const float* src = W + o * in;
    for (int64_t g = 0; g < ng; ++g) {
      float xmin = 0, xmax = 0;
      for (int64_t j = g * G; j < (g + 1) * G; ++j) {
        xmin = std::min(xmin, src[row_of(j)]);
        xmax = std::max(xmax, src[row_of(j)]);
      }
      float s, z;
      if (sym) {
        s = f16_at_least(std::max(2.0f * std::max(-xmin, xmax) / 15.0f, 1e-5f));
        z = 8;
      } else {
        s = f16_at_least(std::max((xmax - xmin) / 15.0f, 1e-5f));
        z = std::clamp(std::nearbyint(-xmin / s), float(min_zero), 15.0f);
      }
      w.scales[size_t(o * ng + g)] = s;
      w.zeros[size_t(o * ng + g)] = z;
      for (int64_t j = g * G; j < (g + 1) * G; ++j) {
        const float q = std::clamp(std::nearbyint(src[row_of(j)] / s) + z, 0.0f, 15.0f);
        w.packed[size_t(o * iw + j / 8)] |= uint32_t(q) << (4 * (j % 8));
      }
    }
  }
  return w;
}

Fp8Weight quantize_fp8(const float* W, int64_t out, int64_t in, int64_t block_n, int64_t block_k) {
  if (out <= 0 || in <= 0 || block_n <= 0 || block_k <= 0)
    fail("quantize_fp8: [{}, {}] with blocks [{}, {}]: every size must be positive", out, in,
         block_n, block_k);
  Fp8Weight w;
  w.out = out, w.in = in, w.block_n = block_n, w.block_k = block_k;
  const int64_t nn = (out + block_n - 1) / block_n, nk = (in + block_k - 1) / block_k;
  w.scale_inv.resize(size_t(nn * nk));
  w.w.resize(size_t(out * in));
  for (int64_t bn = 0; bn < nn; ++bn)
    for (int64_t bk = 0; bk < nk; ++bk) {
      const int64_t o1 = std::min(out, (bn + 1) * block_n), k1 = std::min(in, (bk + 1) * block_k);
      float amax = 0;
      for (int64_t o = bn * block_n; o < o1; ++o)
        for (int64_t k = bk * block_k; k < k1; ++k) amax = std::max(amax, std::fabs(W[o * in + k]));
      const float s = amax > 0 ? amax / 448.0f : 1.0f;
      w.scale_inv[size_t(bn * nk + bk)] = s;
      for (int64_t o = bn * block_n; o < o1; ++o)
        for (int64_t k = bk * block_k; k < k1; ++k)
          w.w[size_t(o * in + k)] = f32_to_fp8_e4m3(W[o * in + k] / s);
    }
  return w;
}

float fp8_e4m3_to_f32(uint8_t b) {
  // float8_e4m3fn (OCP FP8, torch c10/util/Float8_e4m3fn.h): sign, 4 exponent bits (bias 7),
  // 3 mantissa bits; exponent 0 is subnormal (m * 2^-9); S.1111.111 is NaN; no infinities.
  const uint32_t sign = uint32_t(b & 0x80u) << 24;
  const uint32_t e = (b >> 3) & 15u, m = b & 7u;
  if (e == 15 && m == 7) return std::bit_cast<float>(sign | 0x7fc00000u);
  if (e == 0) {
    const float v = float(m) * 0x1p-9f;  // exact
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((e + 120u) << 23) | (m << 20));
}

uint8_t f32_to_fp8_e4m3(float f) {
  // Round to nearest even; finite values beyond +-448 and infinities saturate to +-448, which is
  // what transformers' Fp8Quantize stores (torch.clamp(x, -448, 448).to(torch.float8_e4m3fn));
  // NaN stays NaN (0x7f with the sign).
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint8_t sign = uint8_t((u >> 24) & 0x80u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7f;
  if (a >= 0x43e00000u) return sign | 0x7e;  // >= 448 (and inf)
  if (a < (121u << 23)) {
    // Below 2^-6, the smallest normal: a multiple of 2^-9, rounded to nearest even (x * 512 is
    // exact; nearbyint rounds half to even in the default rounding mode). 8 becomes 0x08 = 2^-6.
    const float v = std::bit_cast<float>(a) * 512.0f;
    return sign | uint8_t(std::nearbyint(v));
  }
  // Normal: keep 3 of the 23 mantissa bits, rounding half to even; rebias the exponent 127 -> 7.
  uint32_t r = a + 0x7ffffu + ((a >> 20) & 1u);
  return sign | uint8_t((r >> 20) - (120u << 3));
}

}  // namespace hogwild
