// A loaded model: everything one model needs to serve sessions, loaded once and shared by every
// command (run, generate, bench, eval, serve) and by every session of an Engine.
//
//   ModelOptions --Model::load--> config.json, tokenizer.json (+ tokenizer_config.json),
//   chat template, generation_config.json, the backend on the chosen device with the weights.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "hogwild/codec.h"
#include "kv/backend.h"
#include "model/config.h"
#include "sampling/generation_config.h"
#include "sampling/stop_policy.h"
#include "tokenizer/tokenizer.h"

namespace hogwild {

struct ModelOptions {
  std::string model_dir;  // a Hugging Face model directory
  std::string device =
      "auto";             // "auto" (CUDA when usable and the model fits its kernels), "cuda", "cpu"
  int64_t kv_tokens = 0;  // CUDA KV pool in tokens; 0 = the free GPU memory minus 1 GiB
  int64_t max_batch_tokens = 0;  // largest forward in tokens (CUDA activations); 0 = 4096
  bool need_tokenizer = true;    // false: a model without tokenizer.json loads (ids only)
};

/// "cuda" or "cpu" for the option's value and a model of config c. Throws hogwild::Error for
/// "cuda" on a build or machine without it, or a model its kernels cannot run; "auto" falls back
/// to "cpu" with a note on stderr when the GPU cannot run the model.
std::string resolve_device(const std::string& device, const ModelConfig& c);

/// The backend for model_dir on a resolved device ("cuda" or "cpu"); loads the weights (CUDA:
/// streamed from the checkpoint as bf16; CPU: fp32). Throws hogwild::Error for unreadable or
/// mismatching weights.
std::unique_ptr<Backend> make_backend(const std::string& model_dir, const std::string& device,
                                      int64_t kv_tokens, int64_t max_batch_tokens);

class Model {
 public:
  /// Loads everything. Throws hogwild::Error (saying what to do) for a missing directory,
  /// config, tokenizer (when need_tokenizer), a tokenizer that does not fit vocab_size, an EOS id
  /// outside the vocabulary (resolve_stop_policy), unreadable weights or an unusable device.
  static std::unique_ptr<Model> load(const ModelOptions& options);

  const std::string& dir() const { return dir_; }
  const ModelConfig& config() const { return backend_->config(); }
  bool has_tokenizer() const { return tokenizer_ != nullptr; }
  /// Throws hogwild::Error when the model has no tokenizer.json.
  const Tokenizer& tokenizer() const;
  const TextCodec& codec() const;
  /// The model's chat template, or nullptr when it has none (chat_template_error() says why).
  const chat::ChatTemplate* chat_template() const { return template_.get(); }
  /// Why chat_template() is null: "" when the model has no template, else the parse error.
  const std::string& chat_template_error() const { return template_error_; }
  const GenerationConfig& generation_config() const { return gen_; }
  Backend& backend() { return *backend_; }
  const std::string& device() const { return device_; }
  /// The one stop set of every command (sampling/stop_policy.h): tokenizer eos_token, config.json
  /// eos_token_id and generation_config.json eos_token_id, deduplicated, in that order.
  const std::vector<int32_t>& stop_ids() const { return stop_.eos_ids; }
  /// The same with where each id comes from.
  const StopPolicy& stop_policy() const { return stop_; }

 private:
  Model() = default;
  std::string dir_, device_, template_error_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<TokenizerCodec> codec_;
  std::unique_ptr<chat::ChatTemplate> template_;
  GenerationConfig gen_;
  std::unique_ptr<Backend> backend_;
  StopPolicy stop_;
};

}  // namespace hogwild
