// check_checkpoint and the readers of quantized linear layers (model/loader.h). Tensor names of the
// stored pieces are those of the HF checkpoints (model/quant.h): AutoAWQ / AutoGPTQ `qweight`,
// `qzeros`, `scales`, `g_idx`; transformers FP8Linear `weight`, `weight_scale_inv`.
#include "model/loader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <map>

#include "core/error.h"

namespace hogwild {

namespace {

std::string name_list(const std::vector<std::string>& v) {
  constexpr size_t kShow = 6;
  std::string s;
  for (size_t i = 0; i < v.size() && i < kShow; ++i) s += (i ? ", " : "") + v[i];
  if (v.size() > kShow) s += fmt::format(", ... and {} more", v.size() - kShow);
  return s;
}

std::string module_of(const TensorSpec& s) { return module_name(s); }

// The experts layout of a checkpoint: fused when the first MoE layer holds the fused
// experts.gate_up_proj (transformers 5.x module form), else per expert (the published form).
ExpertLayout expert_layout(const ModelConfig& c, const Checkpoint& ck) {
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    if (c.is_moe_layer(l))
      return ck.find(fmt::format("model.layers.{}.mlp.experts.gate_up_proj", l))
                 ? ExpertLayout::fused
                 : ExpertLayout::per_expert;
  return ExpertLayout::per_expert;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string dtype_list(std::initializer_list<Dtype> l) {
  std::string s;
  for (Dtype d : l) s += (s.empty() ? "" : " or ") + std::string(dtype_name(d));
  return s;
}

// Collects the problems of one checkpoint against the table.
struct Checker {
  const Checkpoint& ck;
  std::vector<std::string> problems, missing;
  std::map<std::string, bool> expected;

  // The entry `name` with one of `dtypes` and `shape`; a problem (and nullptr when absent) else.
  const Checkpoint::Entry* get(const std::string& name, std::initializer_list<Dtype> dtypes,
                               const std::vector<int64_t>& shape, bool optional = false) {
    expected[name] = true;
    const Checkpoint::Entry* e = ck.find(name);
    if (!e) {
      if (!optional) missing.push_back(name);
      return nullptr;
    }
    bool dtype_ok = false;
    for (Dtype d : dtypes) dtype_ok = dtype_ok || e->info->dtype == d;
    if (!dtype_ok)
      problems.push_back(fmt::format("tensor {}: expected dtype {}, got {}", name,
                                     dtype_list(dtypes), dtype_name(e->info->dtype)));
    if (e->info->shape != shape)
      problems.push_back(fmt::format("tensor {}: expected shape {}, got {}", name, shape_str(shape),
                                     shape_str(e->info->shape)));
    return e;
  }
};

// The int4 pieces of linear layer s (out, in) = s.shape; shapes as in model/quant.h.
bool check_int4(Checker& k, const QuantConfig& q, const TensorSpec& s, CheckedTensor& t) {
  const std::string m = module_of(s);
  const int64_t out = s.shape[0], in = s.shape[1], g = layer_group_size(q, in);
  if (in % 8 != 0 || out % 8 != 0 || in % g != 0) {
    k.problems.push_back(fmt::format(
        "{}: [{}, {}] cannot be stored in 4 bits with group_size {} (in_features and out_features "
        "must be multiples of 8, the group size must divide in_features)",
        m, out, in, q.group_size));
    return false;
  }
  const bool awq = q.method == QuantMethod::awq;
  const std::vector<int64_t> qw =
      awq ? std::vector<int64_t>{in, out / 8} : std::vector<int64_t>{in / 8, out};
  t.entry = k.get(m + ".qweight", {Dtype::i32}, qw);
  t.qzeros = k.get(m + ".qzeros", {Dtype::i32}, {in / g, out / 8});
  t.scales = k.get(m + ".scales", {Dtype::f16, Dtype::bf16}, {in / g, out});
  if (!awq) t.g_idx = k.get(m + ".g_idx", {Dtype::i32}, {in}, /*optional=*/!q.desc_act);
  return t.entry && t.qzeros && t.scales;
}

bool check_fp8(Checker& k, const QuantConfig& q, const TensorSpec& s, CheckedTensor& t) {
  const std::string m = module_of(s);
  const int64_t out = s.shape[0], in = s.shape[1];
  t.entry = k.get(s.name, {Dtype::f8_e4m3}, s.shape);
  t.scale_inv = k.get(m + ".weight_scale_inv", {Dtype::f32, Dtype::bf16},
                      {ceil_div(out, q.block_n), ceil_div(in, q.block_k)});
  return t.entry && t.scale_inv;
}

std::vector<int32_t> read_i32(const Checkpoint::Entry* e) {
  std::vector<int32_t> v(e->info->numel());
  std::memcpy(v.data(), e->file->data(*e->info), v.size() * 4);
  return v;
}

std::vector<float> read_f32(const Checkpoint::Entry* e) {
  std::vector<float> v(e->info->numel());
  convert_to_f32(e->file->data(*e->info), e->info->dtype, v.size(), v.data());
  return v;
}

}  // namespace

std::string module_name(const TensorSpec& s) {
  const std::string suffix = ".weight";
  return s.name.ends_with(suffix) ? s.name.substr(0, s.name.size() - suffix.size()) : s.name;
}

bool is_quantizable_linear(const TensorSpec& s) {
  // The fused 3-D experts tensors (transformers 5.x form) are matched as dense tensors only; a
  // MoE router (mlp.gate) stays dense, as the AWQ, GPTQ and FP8 releases of MoE models keep it.
  return s.role == TensorRole::matrix && s.kind != TensorKind::embed_tokens &&
         s.kind != TensorKind::lm_head && s.kind != TensorKind::router &&
         s.kind != TensorKind::experts_gate_up_proj && s.kind != TensorKind::experts_down_proj;
}

WeightFormat tensor_format(const QuantConfig& q, const TensorSpec& s) {
  return is_quantizable_linear(s) ? linear_format(q, module_name(s)) : WeightFormat::dense;
}

uint64_t stored_bytes(const CheckedTensor& t) {
  uint64_t n = 0;
  for (const Checkpoint::Entry* e : {t.entry, t.qzeros, t.scales, t.g_idx, t.scale_inv})
    if (e) n += e->info->nbytes();
  return n;
}

Int4Weight read_int4(const CheckedTensor& t, const QuantConfig& q) {
  HOGWILD_CHECK(t.format == WeightFormat::int4 && t.entry && t.qzeros && t.scales);
  const int64_t out = t.spec.shape[0], in = t.spec.shape[1], g = layer_group_size(q, in);
  const std::string m = module_of(t.spec);
  const std::vector<int32_t> qweight = read_i32(t.entry), qzeros = read_i32(t.qzeros);
  const std::vector<float> scales = read_f32(t.scales);
  if (q.method == QuantMethod::awq)
    return unpack_awq(qweight.data(), qzeros.data(), scales.data(), in, out, g, m);
  const std::vector<int32_t> g_idx = t.g_idx ? read_i32(t.g_idx) : std::vector<int32_t>();
  return unpack_gptq(qweight.data(), qzeros.data(), scales.data(), t.g_idx ? g_idx.data() : nullptr,
                     in, out, g, q.gptq_v1_zeros, m);
}

Fp8Weight read_fp8(const CheckedTensor& t, const QuantConfig& q) {
  HOGWILD_CHECK(t.format == WeightFormat::fp8 && t.entry && t.scale_inv);
  Fp8Weight w;
  w.out = t.spec.shape[0], w.in = t.spec.shape[1], w.block_n = q.block_n, w.block_k = q.block_k;
  const uint8_t* p = t.entry->file->data(*t.entry->info);
  w.w.assign(p, p + t.entry->info->nbytes());
  w.scale_inv = read_f32(t.scale_inv);
  return w;
}

std::vector<CheckedTensor> check_checkpoint(const ModelConfig& c, const Checkpoint& ck,
                                            const std::string& model_dir) {
  std::vector<CheckedTensor> out;
  Checker k{ck, {}, {}, {}};
  std::vector<std::string> unexpected;
  const QuantConfig& q = c.quantization_config;
  for (TensorSpec& s : model_tensor_specs(c, expert_layout(c, ck))) {
    CheckedTensor t{s, nullptr};
    t.format = tensor_format(q, s);
    bool ok;
    if (t.format == WeightFormat::int4) {
      ok = check_int4(k, q, s, t);
    } else if (t.format == WeightFormat::fp8) {
      ok = check_fp8(k, q, s, t);
    } else {
      t.entry = k.get(s.name, {Dtype::bf16, Dtype::f16, Dtype::f32}, s.shape);
      ok = t.entry != nullptr;
    }
    if (ok) out.push_back(std::move(t));
  }
  for (const auto& [name, e] : ck.tensors())
    if (!k.expected.count(name) && !is_ignorable_tensor(c, name)) unexpected.push_back(name);
  // The summaries of missing and unexpected tensors first: the per-tensor lines after them are
  // cut at six.
  std::vector<std::string> problems;
  if (!k.missing.empty())
    problems.push_back(
        fmt::format("{} missing tensor(s): {}", k.missing.size(), name_list(k.missing)));
  if (!unexpected.empty())
    problems.push_back(
        fmt::format("{} unexpected tensor(s): {}", unexpected.size(), name_list(unexpected)));
  const size_t n_summaries = problems.size();
  problems.insert(problems.end(), k.problems.begin(), k.problems.end());
  if (!problems.empty()) {
    std::string msg =
        fmt::format("{}: the weights do not match config.json ({}, {} layers{})", model_dir,
                    arch_hf_name(c.arch), c.num_hidden_layers,
                    q.method == QuantMethod::none
                        ? ""
                        : fmt::format(", quant_method {}", quant_method_name(q.method)));
    const size_t show = n_summaries + 6;
    for (size_t i = 0; i < problems.size() && i < show; ++i) msg += "; " + problems[i];
    if (problems.size() > show) msg += fmt::format("; ... and {} more", problems.size() - show);
    std::vector<std::string> defaulted = c.defaulted;
    defaulted.insert(defaulted.end(), q.defaulted.begin(), q.defaulted.end());
    if (!defaulted.empty())
      msg += fmt::format(
          "; config.json does not give {}, so the default was used: add the checkpoint's own "
          "value{}",
          fmt::join(defaulted, ", "), defaulted.size() > 1 ? "s" : "");
    msg +=
        "; check that config.json and the safetensors files belong to the same model (re-download "
        "the directory)";
    throw Error(msg);
  }
  return out;
}

}  // namespace hogwild
