// load_model: config.json + safetensors -> fp32 ModelWeights, checked against the tensor table.
#include "model/weights.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "model/loader.h"

namespace hogwild {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// A run of elements to convert: n elements of type `dt` at src -> fp32 at dst.
struct Piece {
  const uint8_t* src;
  Dtype dt;
  float* dst;
  size_t n;
};

}  // namespace

std::vector<TensorDestination> tensor_destinations(ModelWeights& w, const TensorSpec& s) {
  LayerWeights* L = s.layer >= 0 ? &w.layers.at(size_t(s.layer)) : nullptr;
  const ModelConfig& c = w.config;
  const size_t h = size_t(c.hidden_size), d = size_t(c.head_dim);
  size_t n = 1;
  for (int64_t x : s.shape) n *= size_t(x);
  switch (s.kind) {
    case TensorKind::embed_tokens:
      return {{&w.embed_tokens, n}};
    case TensorKind::norm:
      return {{&w.norm, n}};
    case TensorKind::lm_head:
      return {{&w.lm_head, n}};
    case TensorKind::input_layernorm:
      return {{&L->input_layernorm, n}};
    case TensorKind::post_attention_layernorm:
      return {{&L->post_attention_layernorm, n}};
    case TensorKind::q_proj:
      return {{&L->q_proj, n}};
    case TensorKind::k_proj:
      return {{&L->k_proj, n}};
    case TensorKind::v_proj:
      return {{&L->v_proj, n}};
    case TensorKind::o_proj:
      return {{&L->o_proj, n}};
    case TensorKind::q_bias:
      return {{&L->q_bias, n}};
    case TensorKind::k_bias:
      return {{&L->k_bias, n}};
    case TensorKind::v_bias:
      return {{&L->v_bias, n}};
    case TensorKind::q_norm:
      return {{&L->q_norm, n}};
    case TensorKind::k_norm:
      return {{&L->k_norm, n}};
    case TensorKind::qkv_proj: {
      const size_t q = size_t(c.num_attention_heads) * d * h,
                   kv = size_t(c.num_key_value_heads) * d * h;
      return {{&L->q_proj, q}, {&L->k_proj, kv}, {&L->v_proj, kv}};
    }
    case TensorKind::gate_proj:
      return {{&L->gate_proj, n}};
    case TensorKind::up_proj:
      return {{&L->up_proj, n}};
    case TensorKind::gate_up_proj: {
      const size_t g = size_t(c.intermediate_size) * h;
      return {{&L->gate_proj, g}, {&L->up_proj, g}};
    }
    case TensorKind::down_proj:
      return {{&L->down_proj, n}};
    case TensorKind::router:
      return {{&L->router, n}};
    default:
      break;
  }
  // The experts of a MoE layer.
  if (L->experts.empty()) L->experts.resize(size_t(c.num_experts));
  const size_t per = size_t(c.moe_intermediate_size) * h;  // elements of one expert projection
  std::vector<TensorDestination> out;
  switch (s.kind) {
    case TensorKind::expert_gate_proj:
      return {{&L->experts.at(size_t(s.expert)).gate_proj, n}};
    case TensorKind::expert_up_proj:
      return {{&L->experts.at(size_t(s.expert)).up_proj, n}};
    case TensorKind::expert_down_proj:
      return {{&L->experts.at(size_t(s.expert)).down_proj, n}};
    case TensorKind::experts_gate_up_proj:
      for (ExpertWeights& e : L->experts) {
        out.push_back({&e.gate_proj, per});
        out.push_back({&e.up_proj, per});
      }
      return out;
    case TensorKind::experts_down_proj:
      for (ExpertWeights& e : L->experts) out.push_back({&e.down_proj, per});
      return out;
    default:
      break;
  }
  return {};
}

namespace {

// The conversion jobs of a load (plan_load).
struct LoadPlan {
  std::vector<Piece> pieces;                    // dense tensors, <= 4M elements a piece
  std::vector<const CheckedTensor*> quantized;  // one job per quantized layer
  uint64_t total_bytes = 0;                     // stored bytes of every tensor
};

// Sizes every destination of w (one LayerWeights per layer) and cuts the dense tensors into
// pieces (<= 4M elements each, so threads share big tensors and progress moves smoothly). A
// quantized layer is one job (dequantize_layer). Throws nothing of its own.
LoadPlan plan_load(ModelWeights& w, const std::vector<CheckedTensor>& tensors) {
  w.layers.resize(size_t(w.config.num_hidden_layers));
  LoadPlan plan;
  constexpr size_t kChunk = size_t(1) << 22;
  for (const CheckedTensor& t : tensors) {
    plan.total_bytes += stored_bytes(t);
    if (t.format != WeightFormat::dense) {
      for (const TensorDestination& d : tensor_destinations(w, t.spec)) d.field->resize(d.elements);
      plan.quantized.push_back(&t);
      continue;
    }
    const Dtype dt = t.entry->info->dtype;
    const uint8_t* src = t.entry->file->data(*t.entry->info);
    for (const TensorDestination& d : tensor_destinations(w, t.spec)) {
      d.field->resize(d.elements);
      for (size_t off = 0; off < d.elements; off += kChunk) {
        size_t n = std::min(kChunk, d.elements - off);
        plan.pieces.push_back(Piece{src + off * dtype_size(dt), dt, d.field->data() + off, n});
      }
      src += d.elements * dtype_size(dt);
    }
  }
  return plan;
}

// One quantized layer: unpack, dequantize to fp32 (model/quant.h), then split into w's fields
// like a dense tensor (fused Phi3 tensors), whose sizes plan_load set. Throws hogwild::Error as
// read_int4 / read_fp8.
void dequantize_layer(ModelWeights& w, const CheckedTensor& t) {
  const QuantConfig& q = w.config.quantization_config;
  std::vector<float> full(size_t(t.spec.shape[0] * t.spec.shape[1]));
  if (t.format == WeightFormat::int4)
    dequantize(read_int4(t, q), full.data());
  else
    dequantize(read_fp8(t, q), full.data());
  size_t off = 0;
  for (const TensorDestination& d : tensor_destinations(w, t.spec)) {
    std::copy(full.begin() + std::ptrdiff_t(off), full.begin() + std::ptrdiff_t(off + d.elements),
              d.field->begin());
    off += d.elements;
  }
}

// The line printed to stderr after a load: architecture, quantization, parameters, GiB read from
// how many files in how long; tty: clear the progress line first.
void report_loaded(const std::string& model_dir, const ModelConfig& c, uint64_t total_bytes,
                   size_t n_files, double s, bool tty) {
  std::fprintf(stderr,
               "%sloaded %s: %s%s, %.3fB parameters, %.2f GiB from %zu file%s in %.2f s "
               "(%.2f GiB/s)\n",
               tty ? "\r\033[K" : "", model_dir.c_str(), arch_hf_name(c.arch),
               c.quantization_config.method == QuantMethod::none
                   ? ""
                   : fmt::format(" ({}, dequantized to fp32)",
                                 quant_method_name(c.quantization_config.method))
                         .c_str(),
               double(c.num_parameters()) / 1e9, double(total_bytes) / kGiB, n_files,
               n_files == 1 ? "" : "s", s, s > 0 ? double(total_bytes) / kGiB / s : 0.0);
}

}  // namespace

ModelWeights load_model(const std::string& model_dir, const LoadOptions& opt) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  ModelWeights w;
  w.config = load_model_config(model_dir);
  const ModelConfig& c = w.config;
  Checkpoint ck(model_dir);
  std::vector<CheckedTensor> tensors = check_checkpoint(c, ck, model_dir);
  for (const auto& f : ck.files()) f->prefetch();

  const LoadPlan plan = plan_load(w, tensors);
  const std::vector<Piece>& pieces = plan.pieces;
  const std::vector<const CheckedTensor*>& quantized = plan.quantized;
  const uint64_t total_bytes = plan.total_bytes;

  std::atomic<size_t> next{0}, next_quantized{0};
  std::atomic<uint64_t> done_bytes{0};
  std::mutex error_mutex;
  std::string error;  // the first hogwild::Error of a worker thread, rethrown after the join
  auto work = [&] {
    for (size_t i; (i = next_quantized.fetch_add(1)) < quantized.size();) {
      try {
        dequantize_layer(w, *quantized[i]);
      } catch (const Error& e) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (error.empty()) error = e.what();
      }
      done_bytes.fetch_add(stored_bytes(*quantized[i]));
    }
    for (size_t i; (i = next.fetch_add(1)) < pieces.size();) {
      const Piece& p = pieces[i];
      convert_to_f32(p.src, p.dt, p.n, p.dst);
      done_bytes.fetch_add(p.n * dtype_size(p.dt));
    }
  };
  const unsigned n_threads = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
  std::vector<std::thread> threads;
  for (unsigned i = 1; i < n_threads; ++i) threads.emplace_back(work);
  std::thread progress;
  std::atomic<bool> finished{false};
  const bool tty = opt.show_progress && isatty(2);
  const size_t n_files = ck.files().size();
  if (tty) {
    progress = std::thread([&] {
      while (!finished.load()) {
        double s = std::chrono::duration<double>(Clock::now() - t0).count();
        double gib = double(done_bytes.load()) / kGiB;
        std::fprintf(stderr, "\rloading %zu file%s: %.2f / %.2f GiB, %.2f GiB/s   ", n_files,
                     n_files == 1 ? "" : "s", gib, double(total_bytes) / kGiB,
                     s > 0 ? gib / s : 0.0);
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    });
  }
  work();
  for (std::thread& t : threads) t.join();
  finished = true;
  if (progress.joinable()) progress.join();
  if (!error.empty()) {
    if (tty) std::fprintf(stderr, "\r\033[K");
    fail("{}: {}", model_dir, error);
  }
  if (opt.show_progress)
    report_loaded(model_dir, c, total_bytes, n_files,
                  std::chrono::duration<double>(Clock::now() - t0).count(), tty);
  return w;
}

}  // namespace hogwild
