// make-model: deterministic random weights in Hugging Face layout (see make_model.h).
// Built with -ffp-contract=off (src/model/CMakeLists.txt) so `mean + stdev * x` is never fused
// into an FMA on one machine and not on another.
#include "model/make_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>

#include "core/error.h"
#include "core/io.h"
#include "core/json_text.h"
#include "model/loader.h"
#include "model/quant.h"
#include "model/safetensors.h"
#include "model/tensor_names.h"

namespace hogwild {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;  // splitmix64 increment (2^64 / golden ratio)

uint64_t mix64(uint64_t z) {  // splitmix64 output function (Steele, Lea, Flood 2014)
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t fnv1a64(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}

json read_json_file(const fs::path& p, const char* what) {
  const std::string text = read_file(p, what);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    fail("{} is not valid JSON ({})", p.string(), e.what());
  }
}

void write_text(const fs::path& p, const std::string& s) {
  std::ofstream out(p, std::ios::binary);
  out << s;
  if (!out) fail("cannot write {}; check the output directory", p.string());
}

// Token string of a tokenizer_config.json special-token entry: "str", {"content": "str"} or null.
std::string special_token(const json& cfg, const char* key) {
  if (!cfg.contains(key) || cfg[key].is_null()) return "";
  const json& v = cfg[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string())
    return v["content"].get<std::string>();
  fail("tokenizer_config.json: \"{}\" is neither a string nor {{\"content\": ...}}", key);
}

// Id of a token string in tokenizer.json (added_tokens first, then model.vocab), or -1.
int64_t token_id(const json& tok, const std::string& s) {
  if (tok.contains("added_tokens"))
    for (const json& t : tok["added_tokens"])
      if (t.value("content", "") == s) return t.value("id", int64_t(-1));
  if (tok.contains("model") && tok["model"].contains("vocab") &&
      tok["model"]["vocab"].is_object()) {
    auto it = tok["model"]["vocab"].find(s);
    if (it != tok["model"]["vocab"].end() && it->is_number_integer()) return it->get<int64_t>();
  }
  return -1;
}

// Copies the tokenizer files, raises vocab_size to fit and sets bos/eos ids from the tokenizer.
void apply_tokenizer(const fs::path& tdir, const fs::path& out, ModelConfig& c) {
  const fs::path tj = tdir / "tokenizer.json", tc = tdir / "tokenizer_config.json";
  if (!fs::exists(tj) || !fs::exists(tc))
    fail("--tokenizer {}: needs tokenizer.json and tokenizer_config.json", tdir.string());
  const int64_t n = tokenizer_vocab_size(tj.string());
  if (c.vocab_size < n) c.vocab_size = (n + 63) / 64 * 64;
  json tok = read_json_file(tj, "tokenizer.json");
  json cfg = read_json_file(tc, "tokenizer_config.json");
  auto lookup = [&](const char* key) -> int64_t {
    std::string s = special_token(cfg, key);
    if (s.empty()) return -1;
    int64_t id = token_id(tok, s);
    if (id < 0) fail("{}: {} \"{}\" is not in tokenizer.json", tc.string(), key, s);
    return id;
  };
  c.bos_token_id = lookup("bos_token");
  int64_t eos = lookup("eos_token");
  if (eos >= 0) c.eos_token_id = {eos};
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "chat_template.jinja",
                        "special_tokens_map.json"}) {
    if (!fs::exists(tdir / f)) continue;
    std::error_code ec;
    fs::copy_file(tdir / f, out / f, fs::copy_options::overwrite_existing, ec);
    if (ec) fail("cannot copy {} to {}: {}", (tdir / f).string(), out.string(), ec.message());
  }
}

// Runs fn(lo, hi) over [0, n) split across up to 16 threads (1 Mi elements or more each).
template <typename Fn>
void parallel_ranges(size_t n, Fn fn) {
  const size_t kPerThread = size_t(1) << 20;
  const size_t n_threads = std::min<size_t>(
      {(n + kPerThread - 1) / kPerThread, 16, std::max(1u, std::thread::hardware_concurrency())});
  if (n_threads <= 1) return fn(size_t{0}, n);
  std::vector<std::thread> th;
  const size_t per = (n + n_threads - 1) / n_threads;
  for (size_t t = 0; t < n_threads; ++t)
    th.emplace_back(fn, std::min(n, t * per), std::min(n, (t + 1) * per));
  for (std::thread& t : th) t.join();
}

// Mean and std of tensor s's values for preset p (see make_model.h).
std::pair<double, double> init_of(const ModelPreset& p, const TensorSpec& s) {
  if (s.role == TensorRole::norm) return {1.0, p.norm_jitter};
  if (s.role == TensorRole::bias) return {0.0, p.bias_std};
  return {0.0, p.init_std};
}

// Fills `bytes` with tensor s's values in dtype dt, on up to 16 threads (counter-based, so the
// result does not depend on the split).
void fill_tensor(const MakeModelOptions& opt, const ModelPreset& p, const TensorSpec& s,
                 std::vector<uint8_t>& bytes) {
  const std::pair<double, double> init = init_of(p, s);
  const double mean = init.first, stdev = init.second;
  size_t n = 1;
  for (int64_t d : s.shape) n *= size_t(d);
  const size_t es = dtype_size(opt.dtype);
  bytes.resize(n * es);
  parallel_ranges(n, [&](size_t lo, size_t hi) {
    constexpr size_t kBlock = 4096;
    float tmp[kBlock];
    for (size_t i = lo; i < hi; i += kBlock) {
      size_t m = std::min(kBlock, hi - i);
      random_tensor_values(opt.seed, s.name, i, m, mean, stdev, tmp);
      convert_from_f32(tmp, m, opt.dtype, bytes.data() + i * es);
    }
  });
}

// The stored pieces of a quantized layer, in the order they are written.
enum class Piece { dense, qweight, qzeros, scales, g_idx, fp8_weight, scale_inv };

// One tensor of the output files: a dense spec, or one piece of a quantized spec.
struct OutTensor {
  TensorToWrite t;
  size_t spec;  // index into the spec table
  Piece piece;
};

// The tensors that spec s becomes under quantization q (model/quant.h for the shapes).
void out_tensors(const QuantConfig& q, const TensorSpec& s, size_t index, Dtype dense_dtype,
                 std::vector<OutTensor>& out) {
  const WeightFormat f = tensor_format(q, s);
  const std::string m = module_name(s);
  if (f == WeightFormat::dense) {
    out.push_back({{s.name, dense_dtype, s.shape}, index, Piece::dense});
    return;
  }
  const int64_t o = s.shape[0], in = s.shape[1];
  if (f == WeightFormat::fp8) {
    out.push_back({{s.name, Dtype::f8_e4m3, s.shape}, index, Piece::fp8_weight});
    out.push_back({{m + ".weight_scale_inv",
                    Dtype::f32,
                    {(o + q.block_n - 1) / q.block_n, (in + q.block_k - 1) / q.block_k}},
                   index,
                   Piece::scale_inv});
    return;
  }
  const int64_t g = layer_group_size(q, in);
  if (q.method == QuantMethod::awq) {
    out.push_back({{m + ".qweight", Dtype::i32, {in, o / 8}}, index, Piece::qweight});
  } else {
    out.push_back({{m + ".g_idx", Dtype::i32, {in}}, index, Piece::g_idx});
    out.push_back({{m + ".qweight", Dtype::i32, {in / 8, o}}, index, Piece::qweight});
  }
  out.push_back({{m + ".qzeros", Dtype::i32, {in / g, o / 8}}, index, Piece::qzeros});
  out.push_back({{m + ".scales", Dtype::f16, {in / g, o}}, index, Piece::scales});
}

// GPTQ act-order's column order of one layer: a Fisher-Yates shuffle of 0..in-1 driven by the
// counter-based generator, keyed by the seed and "<module>.g_idx" (deterministic like the values).
std::vector<int32_t> act_order_perm(uint64_t seed, const std::string& module, int64_t in) {
  std::vector<int32_t> perm(static_cast<size_t>(in));
  for (int64_t i = 0; i < in; ++i) perm[size_t(i)] = int32_t(i);
  const uint64_t key = mix64(seed ^ fnv1a64(module + ".g_idx"));
  for (int64_t i = in - 1; i > 0; --i) {
    const uint64_t j = mix64(key + uint64_t(i + 1) * kGamma) % uint64_t(i + 1);
    std::swap(perm[size_t(i)], perm[size_t(j)]);
  }
  return perm;
}

// The quantized tensors of one layer, made once and handed out piece by piece.
struct QuantizedLayer {
  size_t spec = SIZE_MAX;
  AwqTensors awq;
  GptqTensors gptq;
  Fp8Weight fp8;

  void make(const MakeModelOptions& opt, const ModelPreset& p, const QuantConfig& q,
            const TensorSpec& s, size_t index) {
    if (spec == index) return;
    const int64_t o = s.shape[0], in = s.shape[1];
    std::vector<float> w(size_t(o * in));
    parallel_ranges(w.size(), [&](size_t lo, size_t hi) {
      random_tensor_values(opt.seed, s.name, lo, hi - lo, 0.0, p.init_std, w.data() + lo);
    });
    const std::string m = module_name(s);
    if (q.method == QuantMethod::fp8) {
      fp8 = quantize_fp8(w.data(), o, in, q.block_n, q.block_k);
    } else if (q.method == QuantMethod::awq) {
      awq = pack_awq(quantize_int4(w.data(), o, in, layer_group_size(q, in), false, {}), m);
    } else {
      const std::vector<int32_t> perm =
          q.desc_act ? act_order_perm(opt.seed, m, in) : std::vector<int32_t>();
      const Int4Weight iw = quantize_int4(w.data(), o, in, layer_group_size(q, in), q.sym, perm,
                                          q.gptq_v1_zeros ? 1 : 0);
      gptq = pack_gptq(iw, q.gptq_v1_zeros, m);
    }
    spec = index;
  }

  void bytes(const QuantConfig& q, Piece piece, std::vector<uint8_t>& out) const {
    auto put = [&](const auto& v) {
      out.resize(v.size() * sizeof(v[0]));
      std::memcpy(out.data(), v.data(), out.size());
    };
    const bool a = q.method == QuantMethod::awq;
    switch (piece) {
      case Piece::qweight:
        return put(a ? awq.qweight : gptq.qweight);
      case Piece::qzeros:
        return put(a ? awq.qzeros : gptq.qzeros);
      case Piece::scales:
        return put(a ? awq.scales : gptq.scales);
      case Piece::g_idx:
        return put(gptq.g_idx);
      case Piece::fp8_weight:
        return put(fp8.w);
      case Piece::scale_inv:
        return put(fp8.scale_inv);
      case Piece::dense:
        break;
    }
    HOGWILD_CHECK(false);
  }
};

// (module, in_features) of every layer of c that 4-bit q packs. Throws hogwild::Error when a
// layer's in or out features is not a multiple of 8 (eight values per int32).
std::vector<std::pair<std::string, int64_t>> int4_in_features(const QuantConfig& q,
                                                              const ModelConfig& c) {
  const bool awq = q.method == QuantMethod::awq;
  std::vector<std::pair<std::string, int64_t>> ins;
  QuantConfig probe = q;
  probe.group_size = 128;
  for (const TensorSpec& s : model_tensor_specs(c)) {
    if (tensor_format(probe, s) == WeightFormat::dense) continue;
    if (s.shape[0] % 8 != 0 || s.shape[1] % 8 != 0)
      fail(
          "{} is [{}, {}]: 4-bit {} packs eight values per int32, so in_features and out_features "
          "must be multiples of 8; use --quant fp8 or another shape",
          module_name(s), s.shape[0], s.shape[1], awq ? "AWQ" : "GPTQ");
    ins.emplace_back(module_name(s), s.shape[1]);
  }
  return ins;
}

// The group size of a 4-bit checkpoint: `asked` (--group-size; 0 = the largest of 128, 64, 32
// that divides every layer's in_features, else -1 for GPTQ), checked against the format (AWQ:
// 32, 64, 128; GPTQ: -1 or a multiple of 16) and the layers `ins`. Throws hogwild::Error naming
// the sizes that fit.
int64_t int4_group_size(int64_t asked, const std::vector<std::pair<std::string, int64_t>>& ins,
                        bool awq) {
  auto fits = [&](int64_t g) {
    for (const auto& [m, in] : ins)
      if (in % g != 0) return false;
    return true;
  };
  std::string fitting;
  for (int64_t g : {32, 64, 128})
    if (fits(g)) fitting += (fitting.empty() ? "" : ", ") + std::to_string(g);
  if (!awq) fitting += fitting.empty() ? "-1 (one group per layer)" : ", -1 (one group per layer)";
  int64_t g = asked;
  if (g == 0) {
    for (int64_t cand : {128, 64, 32})
      if (fits(cand)) {
        g = cand;
        break;
      }
    if (g == 0) {
      if (awq)
        fail(
            "no AWQ group size (32, 64 or 128) divides the in_features of every layer of this "
            "model; use --quant gptq --group-size -1 or --quant fp8");
      g = -1;
    }
  } else if (awq && g != 32 && g != 64 && g != 128) {
    fail("--group-size {}: AWQ (GEMM) uses 32, 64 or 128; for this model use {}", g,
         fitting.empty() ? "--quant gptq --group-size -1" : fitting);
  } else if (!awq && g != -1 && (g <= 0 || g % 16 != 0)) {
    fail(
        "--group-size {}: GPTQ uses -1 (one group per layer) or a positive multiple of 16; for "
        "this model use {}",
        g, fitting);
  } else if (g != -1) {
    for (const auto& [m, in] : ins)
      if (in % g != 0)
        fail(
            "--group-size {} does not divide in_features {} of {}: every group must hold {} whole "
            "input rows; for this model use {}",
            g, in, m, g, fitting.empty() ? "--quant gptq --group-size -1" : fitting);
  }
  return g;
}

}  // namespace

QuantConfig make_model_quant_config(const MakeModelOptions& opt, const ModelConfig& c) {
  QuantConfig q;
  if (opt.quant == QuantMethod::none) {
    if (opt.group_size != 0 || opt.desc_act || !opt.sym)
      fail(
          "--group-size, --desc-act and --no-sym describe a quantized model; add --quant awq|gptq");
    return q;
  }
  q.method = opt.quant;
  if (q.method == QuantMethod::fp8) {
    if (opt.group_size != 0 || opt.desc_act || !opt.sym)
      fail(
          "--quant fp8 stores e4m3 weights with one scale per 128x128 block (weight_block_size "
          "[128, 128]); --group-size, --desc-act and --no-sym apply to --quant awq and gptq only");
    q.block_n = q.block_k = 128;
    return parse_quant_config(json{{"quantization_config", quant_config_to_json(q)}});
  }
  const bool awq = q.method == QuantMethod::awq;
  if (awq && opt.desc_act)
    fail("--desc-act is GPTQ's act-order; AWQ has none: drop it, or use --quant gptq --desc-act");
  if (awq && !opt.sym)
    fail(
        "--no-sym selects asymmetric GPTQ; AWQ always stores zero points (zero_point true): drop "
        "--no-sym, or use --quant gptq --no-sym");
  q.bits = 4;
  q.zero_point = true;
  q.sym = awq ? true : opt.sym;
  q.desc_act = !awq && opt.desc_act;
  q.gptq_v1_zeros = true;
  q.group_size = int4_group_size(opt.group_size, int4_in_features(q, c), awq);
  return parse_quant_config(json{{"quantization_config", quant_config_to_json(q)}});
}

void random_tensor_values(uint64_t seed, const std::string& name, uint64_t first, size_t n,
                          double mean, double stdev, float* out) {
  // Irwin-Hall with 4 uniform 16-bit words: mean 4 * 32767.5, variance 4 * (65536^2 - 1) / 12.
  static const double kInvStd = 1.0 / std::sqrt((65536.0 * 65536.0 - 1.0) / 3.0);
  const uint64_t key = mix64(seed ^ fnv1a64(name));
  for (size_t i = 0; i < n; ++i) {
    uint64_t r = mix64(key + (first + i + 1) * kGamma);
    uint64_t s = (r & 0xffff) + ((r >> 16) & 0xffff) + ((r >> 32) & 0xffff) + (r >> 48);
    double x = (double(s) - 131070.0) * kInvStd;
    double scaled = stdev * x;
    out[i] = float(mean + scaled);
  }
}

ModelWeights make_model_weights(const ModelPreset& p, uint64_t seed) {
  ModelWeights w;
  w.config = p.config;
  w.config.torch_dtype = dtype_torch_name(Dtype::f32);
  w.layers.resize(size_t(w.config.num_hidden_layers));
  for (const TensorSpec& s : model_tensor_specs(w.config)) {
    const std::pair<double, double> init = init_of(p, s);
    const double mean = init.first, stdev = init.second;
    uint64_t first = 0;  // element offset of this field in the (possibly fused) tensor
    for (const TensorDestination& d : tensor_destinations(w, s)) {
      d.field->resize(d.elements);
      float* out = d.field->data();
      parallel_ranges(d.elements, [&](size_t lo, size_t hi) {
        random_tensor_values(seed, s.name, first + lo, hi - lo, mean, stdev, out + lo);
      });
      first += d.elements;
    }
  }
  return w;
}

int64_t tokenizer_vocab_size(const std::string& path) {
  json tok = read_json_file(path, "tokenizer.json");
  int64_t max_id = -1;
  if (tok.contains("model") && tok["model"].contains("vocab")) {
    const json& v = tok["model"]["vocab"];
    if (v.is_object()) {
      for (const auto& [k, id] : v.items())
        if (id.is_number_integer()) max_id = std::max(max_id, id.get<int64_t>());
    } else if (v.is_array()) {  // Unigram: [[piece, score], ...], id = index
      max_id = int64_t(v.size()) - 1;
    }
  }
  if (tok.contains("added_tokens") && tok["added_tokens"].is_array())
    for (const json& t : tok["added_tokens"])
      if (t.contains("id") && t["id"].is_number_integer())
        max_id = std::max(max_id, t["id"].get<int64_t>());
  if (max_id < 0) fail("{} has no model.vocab or added_tokens; is it a tokenizer.json?", path);
  return max_id + 1;
}

Arch config_file_arch(const std::string& path) {
  const json j = read_json_file(path, "--config");
  try {
    return parse_model_config(j).arch;
  } catch (const Error& e) {
    fail("{}: {}", path, e.what());
  }
}

namespace {

// The preset make-model writes: --preset NAME of --arch, or the model of --config FILE (its
// initializer_range as init_std, 0.02 when absent). Throws hogwild::Error for an unknown preset, a
// config that does not parse or one of another architecture than --arch.
ModelPreset chosen_preset(const MakeModelOptions& opt) {
  ModelPreset p;
  if (!opt.preset.empty()) {
    p = find_preset(opt.arch, opt.preset);
  } else {
    json j = read_json_file(opt.config_file, "--config");
    p.name = "config:" + fs::path(opt.config_file).filename().string();
    try {
      p.config = parse_model_config(j);
    } catch (const Error& e) {
      fail("{}: {}", opt.config_file, e.what());
    }
    if (p.config.arch != opt.arch)
      fail("{} describes a {} model but --arch is {}; make them agree", opt.config_file,
           arch_hf_name(p.config.arch), arch_short_name(opt.arch));
    p.init_std = j.value("initializer_range", 0.02);
  }
  return p;
}

// Makes `out` an empty-enough directory for a model: creates it, refuses a file or (without
// force) a non-empty directory, and with force removes the files of an earlier model that the
// loader could pick up beside the new ones (old shards, a tokenizer that does not fit the new
// vocab_size). Throws hogwild::Error naming the directory.
void prepare_out_dir(const fs::path& out, bool force) {
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_directory(out, ec))
    fail("--out {}: is a file, not a directory; give a directory for the model", out.string());
  if (fs::is_directory(out, ec) && !fs::is_empty(out, ec) && !force)
    fail(
        "--out {}: the directory is not empty; give a new directory, or pass --force to replace "
        "the model files in it",
        out.string());
  fs::create_directories(out, ec);
  if (!fs::is_directory(out))
    fail("cannot create output directory {}: {}", out.string(), ec.message());
  for (const auto& e : fs::directory_iterator(out)) {
    const std::string f = e.path().filename().string();
    if (f == "model.safetensors" || f == "model.safetensors.index.json" || f == "config.json" ||
        f == "generation_config.json" || f == "tokenizer.json" || f == "tokenizer_config.json" ||
        f == "chat_template.jinja" || f == "special_tokens_map.json" ||
        (f.rfind("model-", 0) == 0 && f.size() > 12 && f.ends_with(".safetensors")))
      fs::remove(e.path(), ec);
  }
}

// The shards of the checkpoint: indices into `tensors` in table order, a new shard when the next
// tensor would pass max_shard_size bytes (the pieces of one quantized layer stay together; a
// tensor larger than the limit gets a shard of its own). `total`: bytes of all tensors.
std::vector<std::vector<size_t>> plan_shards(const std::vector<OutTensor>& tensors,
                                             uint64_t max_shard_size, uint64_t& total) {
  std::vector<std::vector<size_t>> shards(1);
  uint64_t in_shard = 0;
  total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const uint64_t nb = tensors[i].t.nbytes();
    const bool same_layer = i > 0 && tensors[i - 1].spec == tensors[i].spec;
    if (!shards.back().empty() && !same_layer && in_shard + nb > max_shard_size) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(i);
    in_shard += nb;
    total += nb;
  }
  return shards;
}

}  // namespace

ModelConfig make_model(const MakeModelOptions& opt) {
  if (opt.out_dir.empty()) fail("make-model needs --out DIR");
  if (opt.preset.empty() == opt.config_file.empty())
    fail("make-model needs exactly one of --preset NAME and --config FILE");
  ModelPreset p = chosen_preset(opt);
  if (opt.max_shard_size == 0) fail("--max-shard-size must be positive");
  ModelConfig& c = p.config;
  c.torch_dtype = dtype_torch_name(opt.dtype);
  c.quantization_config = make_model_quant_config(opt, c);
  const QuantConfig& q = c.quantization_config;

  const fs::path out(opt.out_dir);
  prepare_out_dir(out, opt.force);
  if (!opt.tokenizer_dir.empty()) apply_tokenizer(opt.tokenizer_dir, out, c);

  json cj = model_config_to_json(c);
  cj["initializer_range"] = p.init_std;
  cj["hogwild"] = {{"made_by", "hogwild make-model"}, {"preset", p.name}, {"seed", opt.seed}};
  write_text(out / "config.json", dump_json(cj, 2) + "\n");
  json gen = {{"_from_model_config", true}};
  gen["bos_token_id"] = cj["bos_token_id"];
  gen["eos_token_id"] = cj["eos_token_id"];
  write_text(out / "generation_config.json", dump_json(gen, 2) + "\n");

  // Shard: tensors in table order (a quantized layer's pieces together), a new file when the next
  // tensor would pass max_shard_size.
  std::vector<TensorSpec> specs = model_tensor_specs(c);
  std::vector<OutTensor> tensors;
  for (size_t i = 0; i < specs.size(); ++i) out_tensors(q, specs[i], i, opt.dtype, tensors);
  uint64_t total = 0;
  const std::vector<std::vector<size_t>> shards = plan_shards(tensors, opt.max_shard_size, total);
  json weight_map = json::object();
  QuantizedLayer layer;
  for (size_t k = 0; k < shards.size(); ++k) {
    std::string fname = shards.size() == 1 ? "model.safetensors"
                                           : fmt::format("model-{:05d}-of-{:05d}.safetensors",
                                                         k + 1, shards.size());
    std::vector<TensorToWrite> tw;
    for (size_t i : shards[k]) {
      tw.push_back(tensors[i].t);
      weight_map[tensors[i].t.name] = fname;
    }
    write_safetensors((out / fname).string(), tw, {{"format", "pt"}},
                      [&](size_t j, std::vector<uint8_t>& buf) {
                        const OutTensor& t = tensors[shards[k][j]];
                        if (t.piece == Piece::dense) return fill_tensor(opt, p, specs[t.spec], buf);
                        layer.make(opt, p, q, specs[t.spec], t.spec);
                        layer.bytes(q, t.piece, buf);
                      });
    if (opt.show_progress)
      std::fprintf(stderr, "wrote %s (%zu tensors)\n", (out / fname).c_str(), tw.size());
  }
  if (shards.size() > 1) {
    json idx = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
    write_text(out / "model.safetensors.index.json", dump_json(idx, 2) + "\n");
  }
  return c;
}

}  // namespace hogwild
