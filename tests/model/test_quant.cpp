// Weight formats (model/quant.h): unpacking AWQ / GPTQ words and FP8 bytes against hand-computed
// values, the packers and quantizers against the formats' definitions (tests/model/
// quant_reference.h) and round-to-nearest bounds, quantization_config parse errors, and
// check_checkpoint errors on broken quantized checkpoints.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "model/loader.h"
#include "model/make_model.h"
#include "model/quant.h"
#include "tests/model/quant_reference.h"
#include "tests/model/test_util.h"

namespace hogwild {
namespace {

using nlohmann::json;
using test::expect_error;
using test::TempDir;

constexpr uint16_t kHalfOne = 0x3C00, kHalfHalf = 0x3800, kHalfTwo = 0x4000;  // 1.0, 0.5, 2.0

// ---- hand-computed unpacking ----

TEST(QuantUnpack, AwqWordsInAutoAwqInterleavedOrder) {
  // One group of 8 input rows, 8 outputs. Row 0's word 0x76543210 has nibble i = i; AutoAWQ packs
  // column 8j + [0,2,4,6,1,3,5,7][i] into nibble i, so columns 0..7 hold 0,4,1,5,2,6,3,7.
  std::vector<int32_t> qweight(8, 0);
  qweight[0] = 0x76543210;
  // Zeros: nibble 0 (column 0) = 3, nibble 4 (column 1) = 5, the rest 0.
  const std::vector<int32_t> qzeros = {0x00050003};
  std::vector<uint16_t> scales(8, kHalfOne);
  scales[0] = kHalfTwo, scales[1] = kHalfHalf;
  const Int4Weight w = unpack_awq(qweight.data(), qzeros.data(), scales.data(), 8, 8, 8, "m");
  std::vector<float> W(64);
  dequantize(w, W.data());
  // W[o][0] = (q - z) * s.
  const float row0[8] = {(0 - 3) * 2.0f, (4 - 5) * 0.5f, 1, 5, 2, 6, 3, 7};
  for (int o = 0; o < 8; ++o) EXPECT_EQ(W[o * 8 + 0], row0[o]) << "output " << o;
  for (int k = 1; k < 8; ++k) {  // q = 0
    EXPECT_EQ(W[0 * 8 + k], -6.0f);
    EXPECT_EQ(W[1 * 8 + k], -2.5f);
    for (int o = 2; o < 8; ++o) EXPECT_EQ(W[o * 8 + k], 0.0f);
  }
  EXPECT_TRUE(w.perm.empty());
}

TEST(QuantUnpack, GptqSymmetricV1ZerosAreStoredMinusOne) {
  // 16 input rows (two words per output), 8 outputs, G = 8. Output 0: rows 0..7 hold 0..7 and rows
  // 8..15 hold 8..15. qzeros 0x77777777: every stored zero 7, so z = 7 + 1 = 8 (sym).
  std::vector<int32_t> qweight(2 * 8, 0);
  qweight[0 * 8 + 0] = 0x76543210;
  qweight[1 * 8 + 0] = int32_t(0xFEDCBA98u);
  const std::vector<int32_t> qzeros = {0x77777777, 0x77777777};
  std::vector<uint16_t> scales(2 * 8, kHalfOne);
  scales[1 * 8 + 0] = kHalfHalf;  // group 1, output 0
  const Int4Weight w = unpack_gptq(qweight.data(), qzeros.data(), scales.data(), nullptr, 16, 8, 8,
                                   /*v1_zeros=*/true, "m");
  std::vector<float> W(8 * 16);
  dequantize(w, W.data());
  for (int k = 0; k < 16; ++k) EXPECT_EQ(W[k], (k - 8) * (k < 8 ? 1.0f : 0.5f)) << "row " << k;
  for (int o = 1; o < 8; ++o) EXPECT_EQ(W[o * 16 + 3], -8.0f);  // q = 0
  // v2: the same words mean z = 7.
  const Int4Weight w2 = unpack_gptq(qweight.data(), qzeros.data(), scales.data(), nullptr, 16, 8, 8,
                                    /*v1_zeros=*/false, "m");
  dequantize(w2, W.data());
  EXPECT_EQ(W[0], -7.0f);
}

TEST(QuantUnpack, GptqAsymmetricZerosPackedAlongOutputs) {
  // qzeros word: nibble i = column 8c + i; stored 2 for column 0, 14 for column 7 (v1: z = 3, 15).
  std::vector<int32_t> qweight(8, int32_t(0xFFFFFFFFu));  // q = 15 everywhere
  const std::vector<int32_t> qzeros = {int32_t(0xE0000002u)};
  std::vector<uint16_t> scales(8, kHalfOne);
  const Int4Weight w =
      unpack_gptq(qweight.data(), qzeros.data(), scales.data(), nullptr, 8, 8, 8, true, "m");
  std::vector<float> W(64);
  dequantize(w, W.data());
  EXPECT_EQ(W[0 * 8 + 5], 15.0f - 3.0f);
  for (int o = 1; o < 7; ++o) EXPECT_EQ(W[o * 8 + 5], 15.0f - 1.0f);  // stored 0: z = 1
  EXPECT_EQ(W[7 * 8 + 5], 15.0f - 15.0f);
}

TEST(QuantUnpack, GptqDescActSortsRowsIntoGroups) {
  // g_idx alternates 1, 0, 1, 0, ...: the even rows form group 1, the odd rows group 0. The
  // canonical form holds the rows sorted by group (stable): perm = 1, 3, ..., 15, 0, 2, ..., 14.
  std::vector<int32_t> g_idx(16);
  for (int k = 0; k < 16; ++k) g_idx[k] = k % 2 == 0 ? 1 : 0;
  std::vector<int32_t> qweight(2 * 8, 0);
  qweight[0 * 8 + 0] = 0x76543210;
  qweight[1 * 8 + 0] = int32_t(0xFEDCBA98u);
  const std::vector<int32_t> qzeros = {0x77777777, 0x77777777};  // z = 8
  std::vector<uint16_t> scales(2 * 8, kHalfOne);
  scales[1 * 8 + 0] = kHalfTwo;  // group 1 (the even rows), output 0
  const Int4Weight w =
      unpack_gptq(qweight.data(), qzeros.data(), scales.data(), g_idx.data(), 16, 8, 8, true, "m");
  const std::vector<int32_t> want_perm = {1, 3, 5, 7, 9, 11, 13, 15, 0, 2, 4, 6, 8, 10, 12, 14};
  EXPECT_EQ(w.perm, want_perm);
  std::vector<float> W(8 * 16);
  dequantize(w, W.data());
  for (int k = 0; k < 16; ++k) EXPECT_EQ(W[k], (k - 8) * (k % 2 == 0 ? 2.0f : 1.0f)) << k;
  // A g_idx that puts 9 rows in a group is refused, naming the layer.
  g_idx[1] = 1;
  expect_error(
      [&] {
        unpack_gptq(qweight.data(), qzeros.data(), scales.data(), g_idx.data(), 16, 8, 8, true,
                    "model.layers.0.mlp.up_proj");
      },
      {"model.layers.0.mlp.up_proj", "g_idx", "group_size 8"});
}

TEST(QuantUnpack, Fp8E4m3KnownValues) {
  EXPECT_EQ(fp8_e4m3_to_f32(0x38), 1.0f);
  EXPECT_EQ(fp8_e4m3_to_f32(0x7e), 448.0f);
  EXPECT_EQ(fp8_e4m3_to_f32(0x01), 0x1p-9f);  // smallest subnormal
  EXPECT_EQ(fp8_e4m3_to_f32(0x07), 7 * 0x1p-9f);
  EXPECT_EQ(fp8_e4m3_to_f32(0x08), 0x1p-6f);  // smallest normal
  EXPECT_EQ(fp8_e4m3_to_f32(0x3c), 1.5f);
  EXPECT_EQ(fp8_e4m3_to_f32(0xb8), -1.0f);
  EXPECT_EQ(fp8_e4m3_to_f32(0xfe), -448.0f);
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_f32(0x7f)));
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_f32(0xff)));
  EXPECT_EQ(fp8_e4m3_to_f32(0x77), 240.0f);  // 2^7 * 1.875: e = 14 is a normal exponent
  // Every byte against the definition.
  for (int b = 0; b < 256; ++b) {
    const float want = test::ref_e4m3(uint8_t(b)), got = fp8_e4m3_to_f32(uint8_t(b));
    if (std::isnan(want))
      EXPECT_TRUE(std::isnan(got)) << b;
    else
      EXPECT_EQ(got, want) << b;
  }
  // fp32 -> e4m3: round to nearest even, saturate at 448.
  EXPECT_EQ(f32_to_fp8_e4m3(1.0f), 0x38);
  EXPECT_EQ(f32_to_fp8_e4m3(448.0f), 0x7e);
  EXPECT_EQ(f32_to_fp8_e4m3(1000.0f), 0x7e);
  EXPECT_EQ(f32_to_fp8_e4m3(-1000.0f), 0xfe);
  EXPECT_EQ(f32_to_fp8_e4m3(0x1p-9f), 0x01);
  EXPECT_EQ(f32_to_fp8_e4m3(0x1p-10f), 0x00);      // tie between 0 and 2^-9: even
  EXPECT_EQ(f32_to_fp8_e4m3(3 * 0x1p-10f), 0x02);  // tie between 1 and 2 (x 2^-9): even
  EXPECT_EQ(f32_to_fp8_e4m3(1.0625f), 0x38);       // tie between 1.0 and 1.125: even (1.0)
  EXPECT_EQ(f32_to_fp8_e4m3(1.1875f), 0x3a);       // tie between 1.125 and 1.25: even (1.25)
  EXPECT_EQ(f32_to_fp8_e4m3(-1.0f), 0xb8);
  EXPECT_EQ(f32_to_fp8_e4m3(std::nanf("")) & 0x7f, 0x7f);
}

TEST(QuantUnpack, Fp8BlockScalesOnAShapeThatIsNotAMultipleOf128) {
  // [130, 200] with 128x128 blocks: scale_inv is [2, 2] (partial blocks at the edges).
  Fp8Weight w;
  w.out = 130, w.in = 200, w.block_n = 128, w.block_k = 128;
  w.w.assign(130 * 200, 0x38);  // 1.0
  w.w[129 * 200 + 199] = 0xb8;  // -1.0
  w.scale_inv = {1.0f, 2.0f, 3.0f, 4.0f};
  std::vector<float> W(130 * 200);
  dequantize(w, W.data());
  EXPECT_EQ(W[0], 1.0f);
  EXPECT_EQ(W[127 * 200 + 127], 1.0f);
  EXPECT_EQ(W[127 * 200 + 128], 2.0f);
  EXPECT_EQ(W[128 * 200 + 0], 3.0f);
  EXPECT_EQ(W[128 * 200 + 150], 4.0f);
  EXPECT_EQ(W[129 * 200 + 199], -4.0f);
}

// ---- packers and quantizers against the definitions ----

std::vector<float> random_matrix(int64_t out, int64_t in, uint32_t seed, float stdev = 0.1f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, stdev);
  std::vector<float> W(size_t(out * in));
  for (float& x : W) x = nd(rng);
  return W;
}

// Max |W - Wq| / (s / 2) over the matrix for an int4 quantization (s of each element's group):
// round to nearest puts every weight within half a step of its grid point (the scales are rounded
// up to fp16, so the group's extremes stay inside the grid).
double int4_rounding_ratio(const std::vector<float>& W, const std::vector<float>& Wq,
                           const Int4Weight& w) {
  const int64_t ng = w.in / w.group_size;
  std::vector<int64_t> group_of(size_t(w.in));
  for (int64_t j = 0; j < w.in; ++j)
    group_of[size_t(w.perm.empty() ? j : w.perm[j])] = j / w.group_size;
  double worst = 0;
  for (int64_t o = 0; o < w.out; ++o)
    for (int64_t k = 0; k < w.in; ++k) {
      const double s = w.scales[size_t(o * ng + group_of[size_t(k)])];
      worst = std::max(worst, std::abs(double(W[o * w.in + k]) - Wq[o * w.in + k]) / (s / 2));
    }
  return worst;
}

TEST(QuantPack, AwqRoundTripMatchesTheDefinition) {
  const int64_t out = 48, in = 128, G = 32;
  const std::vector<float> W = random_matrix(out, in, 1);
  const Int4Weight q = quantize_int4(W.data(), out, in, G, /*sym=*/false, {});
  const AwqTensors t = pack_awq(q, "m");
  ASSERT_EQ(t.qweight.size(), size_t(in * out / 8));
  ASSERT_EQ(t.qzeros.size(), size_t(in / G * out / 8));
  ASSERT_EQ(t.scales.size(), size_t(in / G * out));
  // The stored tensors, read by the format's definition, hold the quantized values.
  std::vector<float> Wq(size_t(out * in)), Wu(size_t(out * in));
  dequantize(q, Wq.data());
  EXPECT_EQ(test::ref_dequant_awq(t.qweight.data(), t.qzeros.data(), t.scales.data(), in, out, G),
            Wq);
  const Int4Weight u =
      unpack_awq(t.qweight.data(), t.qzeros.data(), t.scales.data(), in, out, G, "m");
  dequantize(u, Wu.data());
  EXPECT_EQ(Wu, Wq);
  EXPECT_LE(int4_rounding_ratio(W, Wq, q), 1.0 + 1e-4);
}

TEST(QuantPack, GptqRoundTripSymAsymDescAct) {
  const int64_t out = 40, in = 96, G = 32;
  const std::vector<float> W = random_matrix(out, in, 2);
  std::vector<int32_t> perm(static_cast<size_t>(in));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(3));
  struct Case {
    const char* name;
    bool sym;
    bool desc_act;
    bool v1;
  };
  for (const Case& c :
       {Case{"sym", true, false, true}, Case{"asym", false, false, true},
        Case{"sym desc_act", true, true, true}, Case{"asym desc_act", false, true, true},
        Case{"asym v2", false, false, false}}) {
    SCOPED_TRACE(c.name);
    const Int4Weight q = quantize_int4(W.data(), out, in, G, c.sym,
                                       c.desc_act ? perm : std::vector<int32_t>(), c.v1 ? 1 : 0);
    const GptqTensors t = pack_gptq(q, c.v1, "m");
    ASSERT_EQ(t.qweight.size(), size_t(in / 8 * out));
    ASSERT_EQ(t.g_idx.size(), size_t(in));
    // g_idx: input row perm[j] is in group j / G.
    for (int64_t j = 0; j < in; ++j) EXPECT_EQ(t.g_idx[size_t(c.desc_act ? perm[j] : j)], j / G);
    if (c.sym) {  // z = 8 stored as 7 in every nibble (v1)
      for (int32_t z : t.qzeros) EXPECT_EQ(uint32_t(z), 0x77777777u);
    }
    std::vector<float> Wq(size_t(out * in)), Wu(size_t(out * in));
    dequantize(q, Wq.data());
    EXPECT_EQ(test::ref_dequant_gptq(t.qweight.data(), t.qzeros.data(), t.scales.data(),
                                     t.g_idx.data(), in, out, G, c.v1),
              Wq);
    const Int4Weight u = unpack_gptq(t.qweight.data(), t.qzeros.data(), t.scales.data(),
                                     t.g_idx.data(), in, out, G, c.v1, "m");
    dequantize(u, Wu.data());
    EXPECT_EQ(Wu, Wq);
    EXPECT_LE(int4_rounding_ratio(W, Wq, q), 1.0 + 1e-4);
  }
}

TEST(QuantPack, Int4QuantizerHandComputedGroup) {
  // One output, one group of 8: values -0.75 .. 1.0.
  // asym: xmin = -0.75, xmax = 1, s = 1.75 / 15 = 0.11667 rounded up to fp16 (step 2^-14 in
  // [2^-4, 2^-3)): 1912 * 2^-14; z = round(0.75 / s) = round(6.427) = 6.
  // sym: s = 2 / 15 = 0.13333 -> 1093 * 2^-13 (step 2^-13 in [2^-3, 2^-2)), z = 8;
  // q(1.0) = round(1.0 / s) + 8 = round(7.495) + 8 = 15.
  const float W[8] = {-0.75f, -0.5f, -0.25f, 0.0f, 0.25f, 0.5f, 0.75f, 1.0f};
  const Int4Weight a = quantize_int4(W, 8, 8, 8, false, {});
  EXPECT_EQ(a.scales[0], 1912.0f / 16384.0f);
  EXPECT_EQ(a.zeros[0], 6.0f);
  const Int4Weight s = quantize_int4(W, 8, 8, 8, true, {});
  EXPECT_EQ(s.scales[0], 1093.0f / 8192.0f);
  EXPECT_EQ(s.zeros[0], 8.0f);
  EXPECT_EQ((s.packed[0] >> 28) & 15u, 15u);
  // q(-0.75) asym: round(-0.75 / s) + 6 = round(-6.427) + 6 = 0; q(0) = z.
  EXPECT_EQ(a.packed[0] & 15u, 0u);
  EXPECT_EQ((a.packed[0] >> 12) & 15u, 6u);
  EXPECT_EQ((s.packed[0] >> 12) & 15u, 8u);
}

TEST(QuantPack, Fp8QuantizerBlockScaleIsAmaxOver448) {
  const int64_t out = 130, in = 200;
  std::vector<float> W = random_matrix(out, in, 4);
  W[129 * in + 199] = 3.0f;  // the amax of block (1, 1)
  const Fp8Weight q = quantize_fp8(W.data(), out, in, 128, 128);
  ASSERT_EQ(q.scale_inv.size(), 4u);
  EXPECT_EQ(q.scale_inv[3], 3.0f / 448.0f);
  EXPECT_EQ(q.w[129 * in + 199], 0x7e);  // the amax maps to 448
  float amax00 = 0;
  for (int64_t o = 0; o < 128; ++o)
    for (int64_t k = 0; k < 128; ++k) amax00 = std::max(amax00, std::abs(W[o * in + k]));
  EXPECT_EQ(q.scale_inv[0], amax00 / 448.0f);
  const std::vector<float> Wq =
      test::ref_dequant_fp8(q.w.data(), q.scale_inv.data(), out, in, 128, 128);
  std::vector<float> Wd(size_t(out * in));
  dequantize(q, Wd.data());
  EXPECT_EQ(Wd, Wq);
  // Each value within half an e4m3 step: relative 2^-4 for normals, 2^-10 * scale below 2^-6.
  for (int64_t o = 0; o < out; ++o)
    for (int64_t k = 0; k < in; ++k) {
      const double s = q.scale_inv[(o / 128) * 2 + k / 128], x = W[o * in + k];
      const double tol = std::max(std::abs(x) * 0x1p-4, 0x1p-10 * s) * (1 + 1e-6);
      ASSERT_LE(std::abs(x - Wq[o * in + k]), tol) << o << "," << k;
    }
}

TEST(QuantPack, PackersRefuseWhatTheFormatCannotStore) {
  const std::vector<float> W = random_matrix(8, 16, 5);
  Int4Weight q = quantize_int4(W.data(), 8, 16, 8, false, {});
  Int4Weight bad = q;
  bad.zeros[0] = 0;  // v1 stores z - 1: zero point 0 cannot be written
  expect_error([&] { pack_gptq(bad, true, "layer.x"); }, {"layer.x", "zero point 0", "1..16"});
  bad = q;
  bad.scales[0] = 0.1f;  // not an fp16 value
  expect_error([&] { pack_awq(bad, "layer.y"); }, {"layer.y", "fp16"});
  bad = q;
  bad.perm.resize(16);
  std::iota(bad.perm.begin(), bad.perm.end(), 0);
  expect_error([&] { pack_awq(bad, "layer.z"); }, {"layer.z", "act-order"});
  expect_error([&] { quantize_int4(W.data(), 8, 16, 12, false, {}); }, {"group size (12)"});
}

// ---- quantization_config parsing ----

json with_qc(json qc) { return json{{"quantization_config", std::move(qc)}}; }

TEST(QuantConfigParse, ReadsTheReleasedForms) {
  QuantConfig a = parse_quant_config(with_qc({{"quant_method", "awq"},
                                              {"bits", 4},
                                              {"group_size", 128},
                                              {"zero_point", true},
                                              {"version", "gemm"},
                                              {"modules_to_not_convert", nullptr}}));
  EXPECT_EQ(a.method, QuantMethod::awq);
  EXPECT_EQ(a.group_size, 128);
  QuantConfig g = parse_quant_config(with_qc({{"quant_method", "gptq"},
                                              {"bits", 4},
                                              {"group_size", 128},
                                              {"desc_act", true},
                                              {"sym", false},
                                              {"checkpoint_format", "gptq"}}));
  EXPECT_EQ(g.method, QuantMethod::gptq);
  EXPECT_TRUE(g.desc_act);
  EXPECT_FALSE(g.sym);
  EXPECT_TRUE(g.gptq_v1_zeros);
  QuantConfig f = parse_quant_config(with_qc({{"quant_method", "fp8"},
                                              {"fmt", "e4m3"},
                                              {"activation_scheme", "dynamic"},
                                              {"weight_block_size", {128, 128}}}));
  EXPECT_EQ(f.method, QuantMethod::fp8);
  EXPECT_EQ(f.block_n, 128);
  EXPECT_EQ(f.block_k, 128);
  EXPECT_EQ(parse_quant_config(json::object()).method, QuantMethod::none);
}

TEST(QuantConfigParse, ErrorsNameTheFieldItsValueAndWhatIsSupported) {
  const json awq = {{"quant_method", "awq"},
                    {"bits", 4},
                    {"group_size", 128},
                    {"zero_point", true},
                    {"version", "gemm"}};
  const json fp8 = {{"quant_method", "fp8"},
                    {"fmt", "e4m3"},
                    {"activation_scheme", "dynamic"},
                    {"weight_block_size", {128, 128}}};
  auto bad = [](json base, const char* key, json value) {
    base[key] = std::move(value);
    return with_qc(base);
  };
  expect_error([&] { parse_quant_config(bad(awq, "quant_method", "bitsandbytes")); },
               {"quant_method", "bitsandbytes", "\"awq\"", "\"gptq\"", "\"fp8\""});
  expect_error([&] { parse_quant_config(bad(awq, "bits", 8)); }, {"bits = 8", "4-bit"});
  expect_error([&] { parse_quant_config(bad(awq, "group_size", 48)); },
               {"group_size = 48", "32, 64 or 128"});
  expect_error([&] { parse_quant_config(bad(awq, "version", "gemv")); },
               {"version", "gemv", "\"gemm\""});
  expect_error([&] { parse_quant_config(bad(awq, "zero_point", false)); },
               {"zero_point = false", "zero points"});
  expect_error([&] { parse_quant_config(bad(fp8, "fmt", "e5m2")); }, {"fmt", "e5m2", "e4m3"});
  expect_error([&] { parse_quant_config(bad(fp8, "activation_scheme", "static")); },
               {"activation_scheme", "static", "\"dynamic\""});
  json gptq = {{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 128}};
  expect_error([&] { parse_quant_config(bad(gptq, "bits", 8)); }, {"bits = 8", "GPTQ"});
  expect_error([&] { parse_quant_config(bad(gptq, "group_size", 40)); },
               {"group_size = 40", "multiple of 16"});
  expect_error([&] { parse_quant_config(bad(gptq, "checkpoint_format", "marlin")); },
               {"checkpoint_format", "marlin", "\"gptq\""});
}

// ---- check_checkpoint on broken quantized checkpoints ----

// A tiny quantized qwen3 checkpoint, rewritten with `edit` applied to its tensor list (drop a
// tensor, change a dtype or shape).
struct Tensor {
  TensorToWrite t;
  std::vector<uint8_t> bytes;
};

void rewrite(const std::string& dir, const std::function<void(std::vector<Tensor>&)>& edit) {
  std::vector<Tensor> ts;
  {
    Checkpoint ck(dir);
    for (const auto& [name, e] : ck.tensors()) {
      const uint8_t* p = e.file->data(*e.info);
      ts.push_back({{name, e.info->dtype, e.info->shape}, {p, p + e.info->nbytes()}});
    }
  }
  edit(ts);
  std::vector<TensorToWrite> tw;
  for (const Tensor& t : ts) tw.push_back(t.t);
  write_safetensors(dir + "/model.safetensors", tw, {{"format", "pt"}},
                    [&](size_t i, std::vector<uint8_t>& b) { b = ts[i].bytes; });
}

std::string make_quant(const TempDir& d, QuantMethod m) {
  MakeModelOptions o;
  o.arch = Arch::qwen3;
  o.preset = "tiny";
  o.seed = 1;
  o.out_dir = d.str();
  o.show_progress = false;
  o.quant = m;
  make_model(o);
  return d.str();
}

void check_dir(const std::string& dir) {
  const ModelConfig c = load_model_config(dir);
  Checkpoint ck(dir);
  check_checkpoint(c, ck, dir);
}

TEST(QuantCheckpoint, MadeCheckpointsPassTheCheck) {
  for (QuantMethod m : {QuantMethod::awq, QuantMethod::gptq, QuantMethod::fp8}) {
    TempDir d;
    EXPECT_NO_THROW(check_dir(make_quant(d, m))) << quant_method_name(m);
  }
}

TEST(QuantCheckpoint, WrongDtypeShapeAndMissingPiecesAreNamed) {
  {
    TempDir d;
    const std::string dir = make_quant(d, QuantMethod::awq);
    rewrite(dir, [](std::vector<Tensor>& ts) {
      for (Tensor& t : ts)
        if (t.t.name == "model.layers.0.self_attn.q_proj.qweight") t.t.dtype = Dtype::f32;
    });
    expect_error([&] { check_dir(dir); },
                 {"quant_method awq", "tensor model.layers.0.self_attn.q_proj.qweight",
                  "expected dtype I32, got F32"});
  }
  {
    TempDir d;
    const std::string dir = make_quant(d, QuantMethod::gptq);
    rewrite(dir, [](std::vector<Tensor>& ts) {
      for (Tensor& t : ts)
        if (t.t.name == "model.layers.1.mlp.down_proj.scales") {
          std::swap(t.t.shape[0], t.t.shape[1]);
        }
    });
    expect_error([&] { check_dir(dir); }, {"tensor model.layers.1.mlp.down_proj.scales",
                                           "expected shape [2, 64], got [64, 2]"});
  }
  {
    TempDir d;
    const std::string dir = make_quant(d, QuantMethod::gptq);
    rewrite(dir, [](std::vector<Tensor>& ts) {
      std::erase_if(
          ts, [](const Tensor& t) { return t.t.name == "model.layers.0.mlp.gate_proj.qzeros"; });
    });
    expect_error([&] { check_dir(dir); },
                 {"1 missing tensor(s): model.layers.0.mlp.gate_proj.qzeros"});
  }
  {
    TempDir d;
    const std::string dir = make_quant(d, QuantMethod::fp8);
    rewrite(dir, [](std::vector<Tensor>& ts) {
      for (Tensor& t : ts)
        if (t.t.name == "model.layers.0.self_attn.o_proj.weight") {
          t.t.dtype = Dtype::bf16;
          t.bytes.resize(t.bytes.size() * 2);
        }
    });
    expect_error([&] { check_dir(dir); }, {"tensor model.layers.0.self_attn.o_proj.weight",
                                           "expected dtype F8_E4M3, got BF16"});
  }
}

}  // namespace
}  // namespace hogwild
