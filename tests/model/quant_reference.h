// For tests: the quantized weight formats dequantized straight from the stored tensors by their
// public definitions, written out here independently of src/model/quant.cpp, and a helper that
// turns a quantized checkpoint into the dense fp32 checkpoint it defines.
//
// Definitions (W[o][k] for a layer y = x W^T, W [out, in]):
// - AWQ GEMM (AutoAWQ awq/utils/packing_utils.py dequantize_gemm = unpack_awq + reverse_awq_order;
//   transformers integrations/awq.py): qweight int32 [in, out/8], qzeros int32 [in/G, out/8],
//   scales fp16 [in/G, out]. Column 8j + t of word j is nibble AWQ_REVERSE_ORDER[t] with
//   AWQ_REVERSE_ORDER = [0, 4, 1, 5, 2, 6, 3, 7]; W[o][k] = (q[k][o] - z[k/G][o]) * s[k/G][o].
// - GPTQ (AutoGPTQ auto_gptq/nn_modules/qlinear/qlinear_cuda_old.py forward / dequantize): qweight
//   int32 [in/8, out], nibble i of [r][o] = input row 8r + i; qzeros int32 [in/G, out/8], nibble i
//   of [g][c] = column 8c + i, stored z - 1 in checkpoint_format "gptq" (zeros = zeros + 1 before
//   use); scales fp16 [in/G, out]; g_idx int32 [in]: W[o][k] = (q[k][o] - z[g][o]) * s[g][o] with
//   g = g_idx[k].
// - FP8 (transformers integrations/finegrained_fp8.py, FP8Linear / Fp8Dequantize): weight
//   float8_e4m3fn [out, in], weight_scale_inv fp32 [ceil(out/bn), ceil(in/bk)]:
//   W[o][k] = e4m3(weight[o][k]) * scale_inv[o/bn][k/bk].
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/safetensors.h"

namespace hogwild::test {

/// IEEE binary16 by its definition: 1 sign, 5 exponent bits (bias 15), 10 mantissa bits.
inline float ref_f16(uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  float v;
  if (e == 0)
    v = std::ldexp(float(m), -24);
  else if (e == 31)
    v = m ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else
    v = std::ldexp(1.0f + float(m) / 1024.0f, e - 15);
  return s ? -v : v;
}

/// float8_e4m3fn by its definition (OCP FP8): bias 7, subnormals m * 2^-9, S.1111.111 is NaN.
inline float ref_e4m3(uint8_t b) {
  const int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
  if (e == 15 && m == 7) return std::numeric_limits<float>::quiet_NaN();
  const float v = e == 0 ? std::ldexp(float(m), -9) : std::ldexp(1.0f + float(m) / 8.0f, e - 7);
  return s ? -v : v;
}

inline uint32_t ref_nibble(int32_t word, int i) { return (uint32_t(word) >> (4 * i)) & 15u; }

/// AWQ GEMM -> W (out, in), see the header.
inline std::vector<float> ref_dequant_awq(const int32_t* qweight, const int32_t* qzeros,
                                          const uint16_t* scales, int64_t in, int64_t out,
                                          int64_t G) {
  static const int kReverse[8] = {0, 4, 1, 5, 2, 6, 3, 7};  // AutoAWQ AWQ_REVERSE_ORDER
  std::vector<float> W(size_t(out * in));
  for (int64_t k = 0; k < in; ++k)
    for (int64_t o = 0; o < out; ++o) {
      const float q = float(ref_nibble(qweight[k * (out / 8) + o / 8], kReverse[o % 8]));
      const float z = float(ref_nibble(qzeros[(k / G) * (out / 8) + o / 8], kReverse[o % 8]));
      W[size_t(o * in + k)] = (q - z) * ref_f16(scales[(k / G) * out + o]);
    }
  return W;
}

/// GPTQ (v1 zeros when v1) -> W (out, in), see the header. g_idx null: k / G.
inline std::vector<float> ref_dequant_gptq(const int32_t* qweight, const int32_t* qzeros,
                                           const uint16_t* scales, const int32_t* g_idx, int64_t in,
                                           int64_t out, int64_t G, bool v1) {
  std::vector<float> W(size_t(out * in));
  for (int64_t k = 0; k < in; ++k) {
    const int64_t g = g_idx ? g_idx[k] : k / G;
    for (int64_t o = 0; o < out; ++o) {
      const float q = float(ref_nibble(qweight[(k / 8) * out + o], int(k % 8)));
      const float z = float(ref_nibble(qzeros[g * (out / 8) + o / 8], int(o % 8))) + (v1 ? 1 : 0);
      W[size_t(o * in + k)] = (q - z) * ref_f16(scales[g * out + o]);
    }
  }
  return W;
}

/// FP8 block-scaled -> W (out, in), see the header.
inline std::vector<float> ref_dequant_fp8(const uint8_t* w, const float* scale_inv, int64_t out,
                                          int64_t in, int64_t bn, int64_t bk) {
  std::vector<float> W(size_t(out * in));
  const int64_t nk = (in + bk - 1) / bk;
  for (int64_t o = 0; o < out; ++o)
    for (int64_t k = 0; k < in; ++k)
      W[size_t(o * in + k)] = ref_e4m3(w[o * in + k]) * scale_inv[(o / bn) * nk + k / bk];
  return W;
}

template <typename T>
std::vector<T> ref_tensor(const Checkpoint& ck, const std::string& name) {
  const Checkpoint::Entry* e = ck.find(name);
  if (!e) throw std::runtime_error("missing tensor " + name);
  std::vector<T> v(e->info->nbytes() / sizeof(T));
  std::memcpy(v.data(), e->file->data(*e->info), v.size() * sizeof(T));
  return v;
}

/// Writes dst_dir: the dense checkpoint that quantized checkpoint src_dir defines. Every quantized
/// layer becomes `<module>.weight` F32 [out, in] dequantized by the ref_dequant_* definitions
/// above from its stored tensors; every other tensor is copied byte for byte; config.json loses
/// `quantization_config`; generation_config.json is copied. Returns the number of layers
/// dequantized.
inline int write_dequantized_copy(const std::string& src_dir, const std::string& dst_dir) {
  namespace fs = std::filesystem;
  nlohmann::json cfg;
  std::ifstream(fs::path(src_dir) / "config.json") >> cfg;
  const nlohmann::json qc = cfg.at("quantization_config");
  const std::string method = qc.at("quant_method").get<std::string>();
  cfg.erase("quantization_config");
  fs::create_directories(dst_dir);
  std::ofstream(fs::path(dst_dir) / "config.json") << cfg.dump(2);
  fs::copy_file(fs::path(src_dir) / "generation_config.json",
                fs::path(dst_dir) / "generation_config.json", fs::copy_options::overwrite_existing);
  Checkpoint ck(src_dir);
  struct Out {
    TensorToWrite t;
    std::vector<uint8_t> bytes;
  };
  std::vector<Out> outs;
  int layers = 0;
  auto ends = [](const std::string& s, const std::string& suf) {
    return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
  };
  auto add_f32 = [&](const std::string& name, int64_t out, int64_t in, std::vector<float> W) {
    Out o{{name, Dtype::f32, {out, in}}, std::vector<uint8_t>(W.size() * 4)};
    std::memcpy(o.bytes.data(), W.data(), o.bytes.size());
    outs.push_back(std::move(o));
    ++layers;
  };
  for (const auto& [name, e] : ck.tensors()) {
    if (ends(name, ".qzeros") || ends(name, ".scales") || ends(name, ".g_idx") ||
        ends(name, ".weight_scale_inv"))
      continue;
    if (ends(name, ".qweight")) {
      const std::string m = name.substr(0, name.size() - 8);
      const auto qw = ref_tensor<int32_t>(ck, name), qz = ref_tensor<int32_t>(ck, m + ".qzeros");
      const auto sc = ref_tensor<uint16_t>(ck, m + ".scales");
      const std::vector<int64_t>& zs = ck.find(m + ".qzeros")->info->shape;
      if (method == "awq") {
        const int64_t in = e.info->shape[0], out = e.info->shape[1] * 8, G = in / zs[0];
        add_f32(m + ".weight", out, in,
                ref_dequant_awq(qw.data(), qz.data(), sc.data(), in, out, G));
      } else {
        const int64_t in = e.info->shape[0] * 8, out = e.info->shape[1], G = in / zs[0];
        const std::vector<int32_t> gi =
            ck.find(m + ".g_idx") ? ref_tensor<int32_t>(ck, m + ".g_idx") : std::vector<int32_t>();
        const bool v1 = qc.value("checkpoint_format", "gptq") == "gptq";
        add_f32(m + ".weight", out, in,
                ref_dequant_gptq(qw.data(), qz.data(), sc.data(), gi.empty() ? nullptr : gi.data(),
                                 in, out, G, v1));
      }
      continue;
    }
    if (e.info->dtype == Dtype::f8_e4m3) {
      const std::string m = name.substr(0, name.size() - 7);  // ".weight"
      const auto w = ref_tensor<uint8_t>(ck, name);
      const auto si = ref_tensor<float>(ck, m + ".weight_scale_inv");
      const int64_t out = e.info->shape[0], in = e.info->shape[1];
      const auto bs = qc.at("weight_block_size").get<std::vector<int64_t>>();
      add_f32(name, out, in, ref_dequant_fp8(w.data(), si.data(), out, in, bs[0], bs[1]));
      continue;
    }
    Out o{{name, e.info->dtype, e.info->shape}, std::vector<uint8_t>(e.info->nbytes())};
    std::memcpy(o.bytes.data(), e.file->data(*e.info), o.bytes.size());
    outs.push_back(std::move(o));
  }
  std::vector<TensorToWrite> tw;
  for (const Out& o : outs) tw.push_back(o.t);
  write_safetensors((fs::path(dst_dir) / "model.safetensors").string(), tw, {{"format", "pt"}},
                    [&](size_t i, std::vector<uint8_t>& buf) { buf = outs[i].bytes; });
  return layers;
}

}  // namespace hogwild::test
