// CudaBackend::load_checkpoint: a Hugging Face checkpoint streamed to the device tensor by tensor
// (docs/CUDA.md "Memory"). Dense tensors go through two 64 MiB pinned chunks (bf16 bytes as they
// are, f16/f32 rounded to bf16 on the host, round-to-nearest-even as torch's .to(torch.bfloat16));
// quantized projections are unpacked and repacked on the host one tensor at a time and kept packed
// on the device (quant_gemm.h). Host memory stays bounded whatever the model size (a 32B model has
// no fp32 host copy).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "core/error.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "cuda/elementwise.h"
#include "model/dtype.h"
#include "model/loader.h"
#include "model/safetensors.h"

namespace hogwild::cuda {

namespace {

using Clock = std::chrono::steady_clock;

// Dense tensors to the device through two pinned host chunks used in turn: a chunk is refilled
// only once the copy that read it has landed (an event per chunk). Prints the progress on a
// terminal. The destructor waits for the stream and frees the chunks (also after a throw).
class PinnedUpload {
 public:
  PinnedUpload(cudaStream_t stream, uint64_t total_bytes, bool show_progress)
      : stream_(stream), total_(total_bytes), tty_(show_progress && isatty(2)) {
    for (int i = 0; i < 2; ++i) {
      HOGWILD_CUDA_CHECK(cudaMallocHost(&pinned_[i], kChunkElems * 2));
      HOGWILD_CUDA_CHECK(cudaEventCreateWithFlags(&done_[i], cudaEventDisableTiming));
    }
  }
  PinnedUpload(const PinnedUpload&) = delete;
  PinnedUpload& operator=(const PinnedUpload&) = delete;
  ~PinnedUpload() {
    cudaStreamSynchronize(stream_);
    for (int i = 0; i < 2; ++i) {
      if (pinned_[i]) cudaFreeHost(pinned_[i]);
      if (done_[i]) cudaEventDestroy(done_[i]);
    }
    if (tty_) std::fprintf(stderr, "\r%80s\r", "");
  }

  // Copies n elements of dtype dt at src to dst (n bf16 values on the device), converted to bf16.
  void put(bf16* dst, const uint8_t* src, Dtype dt, size_t n) {
    for (size_t off = 0; off < n; off += kChunkElems) {
      const size_t m = std::min(kChunkElems, n - off);
      HOGWILD_CUDA_CHECK(cudaEventSynchronize(done_[slot_]));  // the copy that read it landed
      to_bf16(pinned_[slot_], src + off * dtype_size(dt), dt, m);
      HOGWILD_CUDA_CHECK(
          cudaMemcpyAsync(dst + off, pinned_[slot_], m * 2, cudaMemcpyHostToDevice, stream_));
      HOGWILD_CUDA_CHECK(cudaEventRecord(done_[slot_], stream_));
      slot_ ^= 1;
      done_bytes_ += m * dtype_size(dt);
      progress();
    }
  }

  // Waits until every queued copy has landed; throws on a device error.
  void finish() { HOGWILD_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  static constexpr size_t kChunkElems = size_t(32) << 20;  // 64 MiB of bf16

  static void to_bf16(uint16_t* buf, const uint8_t* p, Dtype dt, size_t m) {
    if (dt == Dtype::bf16) {
      std::memcpy(buf, p, m * 2);
    } else if (dt == Dtype::f32) {
      for (size_t i = 0; i < m; ++i) {
        float f;
        std::memcpy(&f, p + 4 * i, 4);
        buf[i] = hogwild::f32_to_bf16(f);
      }
    } else {
      std::vector<float> tmp(m);
      convert_to_f32(p, dt, m, tmp.data());
      for (size_t i = 0; i < m; ++i) buf[i] = hogwild::f32_to_bf16(tmp[i]);
    }
  }

  void progress() {
    if (!tty_ || Clock::now() - last_print_ < std::chrono::milliseconds(200)) return;
    last_print_ = Clock::now();
    const double s = std::chrono::duration<double>(last_print_ - t0_).count();
    const double gib = done_bytes_ / double(1 << 30);
    std::fprintf(stderr, "\rloading to the GPU: %.2f / %.2f GiB, %.2f GiB/s   ", gib,
                 total_ / double(1 << 30), s > 0 ? gib / s : 0.0);
  }

  cudaStream_t stream_;
  uint16_t* pinned_[2] = {nullptr, nullptr};
  cudaEvent_t done_[2] = {nullptr, nullptr};
  int slot_ = 0;
  uint64_t total_ = 0, done_bytes_ = 0;
  bool tty_ = false;
  Clock::time_point t0_ = Clock::now(), last_print_ = Clock::now();
};

// Quantized projections of a checkpoint, each unpacked and repacked on the host (repack_int4 /
// repack_fp8), then kept on the device by `keep`. q/k/v, gate/up and a layer's experts wait for
// their siblings and go up as one fused matrix (the row order of DeviceLayer's fused tensors).
// Throws hogwild::Error for a quantized tensor that is not a linear projection, and for experts
// of one layer stored in different formats or with act-order (the CUDA expert kernels need one
// format per layer).
class QuantAssembly {
 public:
  using Keep = std::function<void(QuantWeight&, const QuantWeightHost&)>;
  QuantAssembly(const ModelConfig& c, std::vector<DeviceLayer>& layers, std::string model_dir,
                Keep keep)
      : c_(c), layers_(layers), dir_(std::move(model_dir)), keep_(std::move(keep)) {}

  void put(const CheckedTensor& t) {
    const QuantConfig& qc = c_.quantization_config;
    QuantWeightHost h = t.format == WeightFormat::int4 ? repack_int4(read_int4(t, qc))
                                                       : repack_fp8(read_fp8(t, qc));
    DeviceLayer& L = layers_[static_cast<size_t>(t.spec.layer)];
    switch (t.spec.kind) {
      case TensorKind::q_proj:
        return fused(t, std::move(h), L.qkv_q, 0, 3, 0);
      case TensorKind::k_proj:
        return fused(t, std::move(h), L.qkv_q, 0, 3, 1);
      case TensorKind::v_proj:
        return fused(t, std::move(h), L.qkv_q, 0, 3, 2);
      case TensorKind::gate_proj:
        return fused(t, std::move(h), L.gate_up_q, 1, 2, 0);
      case TensorKind::up_proj:
        return fused(t, std::move(h), L.gate_up_q, 1, 2, 1);
      case TensorKind::qkv_proj:
        return keep_(L.qkv_q, h);
      case TensorKind::gate_up_proj:
        return keep_(L.gate_up_q, h);
      case TensorKind::o_proj:
        return keep_(L.o_q, h);
      case TensorKind::down_proj:
        return keep_(L.down_q, h);
      case TensorKind::expert_gate_proj:
      case TensorKind::expert_up_proj:
      case TensorKind::expert_down_proj:
        return expert(t, std::move(h), L);
      default:
        fail("{}: tensor {} is stored quantized; only linear projections may be", dir_,
             t.spec.name);
    }
  }

 private:
  // Part `part` of n_parts of the fused matrix `which` of t's layer; the last part to arrive
  // sends the whole matrix up.
  void fused(const CheckedTensor& t, QuantWeightHost h, QuantWeight& dst, int which, int n_parts,
             int part) {
    auto& slots = pending_[{t.spec.layer, which}];
    slots.resize(static_cast<size_t>(n_parts));
    slots[static_cast<size_t>(part)] = std::move(h);
    std::vector<const QuantWeightHost*> parts;
    for (const auto& p : slots)
      if (p) parts.push_back(&*p);
    if (static_cast<int>(parts.size()) < n_parts) return;
    keep_(dst, concat_rows(parts));
    pending_.erase({t.spec.layer, which});
  }

  // All experts of a layer go up as one matrix: [gate; up] of expert e at parts 2e, 2e + 1.
  void expert(const CheckedTensor& t, QuantWeightHost h, DeviceLayer& L) {
    const bool down = t.spec.kind == TensorKind::expert_down_proj;
    QuantWeight& dst = down ? L.experts_down_q : L.experts_gate_up_q;
    if (h.format != dst.format || h.perm.size() > 0)
      fail(
          "{}: {} is stored {} but expert 0 of layer {} is {}; the CUDA backend needs every "
          "expert of a layer in one format, without act-order; use --device cpu",
          dir_, t.spec.name,
          h.perm.empty() ? std::string(weight_format_name(h.format)) : "with act-order",
          t.spec.layer, weight_format_name(dst.format));
    const int E = static_cast<int>(c_.num_experts);
    const int e = static_cast<int>(t.spec.expert);
    if (down) return fused(t, std::move(h), dst, 3, E, e);
    const int up = t.spec.kind == TensorKind::expert_up_proj ? 1 : 0;
    fused(t, std::move(h), dst, 2, 2 * E, 2 * e + up);
  }

  const ModelConfig& c_;
  std::vector<DeviceLayer>& layers_;
  std::string dir_;
  Keep keep_;
  std::map<std::pair<int64_t, int>, std::vector<std::optional<QuantWeightHost>>> pending_;
};

}  // namespace

// Device destination of a dense tensor (the fused [q; k; v] and [gate; up] layouts of
// DeviceLayer); null for a dense expert of a layer whose expert 0 is quantized.
bf16* CudaBackend::weight_destination(const TensorSpec& s) const {
  const ModelConfig& c = cfg_;
  const int64_t H = c.hidden_size, I = c.intermediate_size, Im = c.moe_intermediate_size;
  const int64_t qd = c.num_attention_heads * c.head_dim;
  const int64_t kvd = c.num_key_value_heads * c.head_dim;
  const DeviceLayer* L = s.layer >= 0 ? &layers_[static_cast<size_t>(s.layer)] : nullptr;
  switch (s.kind) {
    case TensorKind::embed_tokens:
      return embed_tokens_;
    case TensorKind::norm:
      return norm_;
    case TensorKind::lm_head:
      return lm_head_;
    case TensorKind::input_layernorm:
      return L->input_layernorm;
    case TensorKind::post_attention_layernorm:
      return L->post_attention_layernorm;
    case TensorKind::q_proj:
    case TensorKind::qkv_proj:
      return L->qkv_proj;
    case TensorKind::k_proj:
      return L->qkv_proj + qd * H;
    case TensorKind::v_proj:
      return L->qkv_proj + (qd + kvd) * H;
    case TensorKind::o_proj:
      return L->o_proj;
    case TensorKind::q_bias:
      return L->qkv_bias;
    case TensorKind::k_bias:
      return L->qkv_bias + qd;
    case TensorKind::v_bias:
      return L->qkv_bias + qd + kvd;
    case TensorKind::q_norm:
      return L->q_norm;
    case TensorKind::k_norm:
      return L->k_norm;
    case TensorKind::gate_proj:
    case TensorKind::gate_up_proj:
      return L->gate_up_proj;
    case TensorKind::up_proj:
      return L->gate_up_proj + I * H;
    case TensorKind::down_proj:
      return L->down_proj;
    case TensorKind::router:
      return L->router;
    case TensorKind::expert_gate_proj:
      return L->experts_gate_up ? L->experts_gate_up + s.expert * 2 * Im * H : nullptr;
    case TensorKind::expert_up_proj:
      return L->experts_gate_up ? L->experts_gate_up + (s.expert * 2 + 1) * Im * H : nullptr;
    case TensorKind::expert_down_proj:
      return L->experts_down ? L->experts_down + s.expert * H * Im : nullptr;
    case TensorKind::experts_gate_up_proj:  // [E, 2 Im, H]: per expert gate rows, then up rows
      return L->experts_gate_up;
    case TensorKind::experts_down_proj:
      return L->experts_down;
  }
  return nullptr;
}

void CudaBackend::load_checkpoint(const std::string& model_dir, bool show_progress) {
  Checkpoint ck(model_dir);
  const std::vector<CheckedTensor> tensors = check_checkpoint(cfg_, ck, model_dir);
  for (const auto& f : ck.files()) f->prefetch();
  uint64_t total_bytes = 0;
  for (const CheckedTensor& t : tensors) total_bytes += t.entry->info->nbytes();
  PinnedUpload upload(stream_, total_bytes, show_progress);
  QuantAssembly quant(cfg_, layers_, model_dir,
                      [this](QuantWeight& dst, const QuantWeightHost& h) { keep_quant(dst, h); });
  for (const CheckedTensor& t : tensors) {
    if (t.format != WeightFormat::dense) {
      quant.put(t);
      continue;
    }
    bf16* dst = weight_destination(t.spec);
    if (!dst)  // a dense expert where expert 0 of its layer is quantized
      fail(
          "{}: {} is stored dense but expert 0 of its layer is quantized; the CUDA backend "
          "needs every expert of a layer in one format; use --device cpu",
          model_dir, t.spec.name);
    upload.put(dst, t.entry->file->data(*t.entry->info), t.entry->info->dtype,
               t.entry->info->numel());
  }
  upload.finish();
}

}  // namespace hogwild::cuda
