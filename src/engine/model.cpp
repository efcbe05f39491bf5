#include "engine/model.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "cpu/cpu_backend.h"
#include "model/weights.h"
#ifdef HOGWILD_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

namespace hogwild {

std::string resolve_device(const std::string& device, const ModelConfig& c) {
  if (device != "auto" && device != "cuda" && device != "cpu")
    fail("device '{}' is not one of auto, cuda, cpu", device);
#ifdef HOGWILD_HAVE_CUDA
  const bool gpu = device != "cpu" && cuda::cuda_device_available();
  if (gpu) {
    const std::string why = cuda::cuda_unsupported(c);
    if (!why.empty()) {
      if (device == "cuda") fail("--device cuda: {}; use --device cpu", why);
      std::fprintf(stderr, "note: running on the CPU: %s\n", why.c_str());
      return "cpu";
    }
  }
#else
  const bool gpu = false;
  (void)c;
#endif
  if (device == "cpu") return "cpu";
  if (device == "cuda" && !gpu) {
#ifdef HOGWILD_HAVE_CUDA
    fail("--device cuda: no usable CUDA GPU (cudaGetDeviceCount found none); use --device cpu");
#else
    fail(
        "--device cuda: this hogwild was built without CUDA (no nvcc at build time); rebuild on a "
        "machine with the CUDA toolkit or use --device cpu");
#endif
  }
  return gpu ? "cuda" : "cpu";
}

std::unique_ptr<Backend> make_backend(const std::string& model_dir, const std::string& device,
                                      int64_t kv_tokens, int64_t max_batch_tokens) {
#ifdef HOGWILD_HAVE_CUDA
  if (device == "cuda") {
    cuda::CudaOptions o;
    o.max_kv_tokens = kv_tokens;
    o.max_batch_tokens = std::max<int64_t>(o.max_batch_tokens, max_batch_tokens);
    return std::make_unique<cuda::CudaBackend>(model_dir, o);
  }
#endif
  (void)max_batch_tokens;
  HOGWILD_CHECK(device == "cpu");
  if (kv_tokens > 0)
    std::fprintf(stderr,
                 "note: the CPU backend has no fixed KV pool, so --kv-tokens reserves no memory "
                 "there (serve still admits requests by it)\n");
  return std::make_unique<cpu::CpuBackend>(load_model(model_dir));
}

std::unique_ptr<Model> Model::load(const ModelOptions& o) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (o.model_dir.empty() || !fs::is_directory(o.model_dir, ec))
    fail("model directory '{}' does not exist; pass an HF model directory with -m", o.model_dir);
  std::unique_ptr<Model> m(new Model());
  m->dir_ = o.model_dir;
  const bool has_tok = fs::exists(fs::path(o.model_dir) / "tokenizer.json", ec);
  if (!has_tok && o.need_tokenizer)
    fail("{}/tokenizer.json is missing; this command needs the model's tokenizer", o.model_dir);
  if (has_tok) {
    m->tokenizer_ = std::make_unique<Tokenizer>(Tokenizer::from_dir(o.model_dir));
    m->codec_ = std::make_unique<TokenizerCodec>(*m->tokenizer_);
  }
  try {
    m->template_ = std::make_unique<chat::ChatTemplate>(chat::ChatTemplate::load(o.model_dir));
  } catch (const chat::NoChatTemplate&) {
    // no template: only formattings with use_template = false work
  } catch (const Error& e) {
    m->template_error_ = e.what();
  }
  m->gen_ = load_generation_config(o.model_dir);
  const ModelConfig config = load_model_config(o.model_dir);
  std::optional<TokenizerEos> teos;
  if (m->tokenizer_) {
    m->tokenizer_->check_fits(config.vocab_size, o.model_dir);
    if (m->tokenizer_->config().eos_token)
      teos = TokenizerEos{*m->tokenizer_->config().eos_token, m->tokenizer_->eos_id()};
  }
  m->stop_ =
      resolve_stop_policy(teos, config.eos_token_id, m->gen_.eos_token_id, config.vocab_size);
  m->device_ = resolve_device(o.device, config);
  m->backend_ = make_backend(o.model_dir, m->device_, o.kv_tokens, o.max_batch_tokens);
  return m;
}

const Tokenizer& Model::tokenizer() const {
  if (!tokenizer_) fail("{}/tokenizer.json is missing; this command needs the tokenizer", dir_);
  return *tokenizer_;
}

const TextCodec& Model::codec() const {
  if (!codec_) fail("{}/tokenizer.json is missing; this command needs the tokenizer", dir_);
  return *codec_;
}

}  // namespace hogwild
