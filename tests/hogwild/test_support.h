// Shared code of the hogwild session tests: a toy byte-level codec, a scripted token source, tiny
// models.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "hogwild/codec.h"
#include "hogwild/formatting.h"
#include "hogwild/session.h"
#include "model/make_model.h"
#include "sampling/sampler.h"
#include "tests/cpu/reference_model.h"
#include "tests/cpu/tiny_model.h"

namespace hogwild::testing {

/// Vocabulary of the toy codec: ids 0..255 are bytes; then special and merged tokens.
inline constexpr int32_t kEos = 256;       // "<|end|>"
inline constexpr int32_t kDotSep = 257;    // ".\n\n": sentence end and separator in one token
inline constexpr int32_t kThe = 258;       // " the"
inline constexpr int32_t kSep = 259;       // "\n\n"
inline constexpr int32_t kToyVocab = 300;  // model vocab_size (ids 260..299 decode to "<tN>")

class ByteCodec : public TextCodec {
 public:
  std::vector<int32_t> encode(std::string_view text) const override {
    std::vector<int32_t> ids;
    for (unsigned char c : text) ids.push_back(c);
    return ids;
  }
  std::string token_bytes(int32_t id) const override {
    if (id >= 0 && id < 256) return std::string(1, static_cast<char>(id));
    if (id == kEos) return "<|end|>";
    if (id == kDotSep) return ".\n\n";
    if (id == kThe) return " the";
    if (id == kSep) return "\n\n";
    if (id < kToyVocab) return "<t" + std::to_string(id) + ">";
    return "";
  }
  int32_t vocab_size() const override { return kToyVocab; }
  std::vector<int32_t> eos_ids() const override { return {kEos}; }
};

/// Returns the worker's scripted ids in order, cycling.
class ScriptPicker : public TokenPicker {
 public:
  explicit ScriptPicker(std::vector<std::vector<int32_t>> scripts)
      : s_(std::move(scripts)), i_(s_.size()) {}
  int32_t pick(int worker, std::vector<float>&) override {
    auto& s = s_.at(worker);
    return s[i_[worker]++ % s.size()];
  }

 private:
  std::vector<std::vector<int32_t>> s_;
  std::vector<size_t> i_;
};

/// Worker w's script: sentences of varying length ending in a step end, either ".\n\n" as one
/// token, "." + "\n" + "\n" (separator across tokens) or "!" + "\n\n".
inline std::vector<int32_t> worker_script(int w, int n_sentences = 12) {
  std::vector<int32_t> ids;
  for (int k = 0; k < n_sentences; ++k) {
    int len = 2 + (w * 5 + k * 3) % 7;
    for (int i = 0; i < len; ++i) ids.push_back(i % 3 == 2 ? kThe : 'a' + (w + i + k) % 26);
    switch ((w + k) % 3) {
      case 0:
        ids.push_back(kDotSep);
        break;
      case 1:
        ids.insert(ids.end(), {'.', '\n', '\n'});
        break;
      default:
        ids.insert(ids.end(), {'!', kSep});
        break;
    }
  }
  return ids;
}

/// generic-math with short ASCII layout texts, a frequent collaboration check and summaries of at
/// most 6 tokens after "Sum: " (KvPolicy::summarise).
inline Formatting test_formatting(int64_t collab_every = 7) {
  Formatting f = builtin_formatting("generic-math");
  f.layout.others_header = "[others of {name}:]\n";
  f.layout.other_separator = " [..]\n";
  f.layout.own_header = "[{name}:]\n";
  f.collab_check.every = collab_every;
  f.collab_check.text = "Redundant? ";
  f.summary.prompt = "Sum: ";  // the KV budget's summarise-and-drop: short summaries
  f.summary.max_tokens = 6;
  return f;
}

/// The tiny model specs of tests/cpu plus Mistral, with a vocabulary for the toy codec.
inline std::vector<test::TinySpec> session_specs() {
  auto v = test::tiny_specs();
  v.push_back(test::tiny_spec("mistral_gqa", Arch::mistral, false, false, false, 4, 2, 8));
  return v;
}

/// Qwen3-MoE specs for the session tests (tests/cpu/tiny_model.h; the CPU backend only).
inline std::vector<test::TinySpec> moe_session_specs() {
  return {test::tiny_moe_spec("qwen3_moe_top2"),
          test::tiny_moe_spec("qwen3_moe_no_norm_dense_layer", /*norm_topk=*/false, {1})};
}

inline ModelWeights session_model(const test::TinySpec& spec, uint64_t seed = 7) {
  ModelConfig c = test::tiny_config(spec);
  c.vocab_size = kToyVocab;
  c.max_position_embeddings = 8192;
  return test::tiny_weights(c, seed);
}

/// Plain generation by the dense reference (tests/cpu/reference_model.h dense_logits: one causal
/// forward over the whole sequence, RoPE at absolute positions): each token drawn by `sampler`
/// from the last row for prompt ++ the tokens so far, n tokens or up to kEos (kept).
inline std::vector<int32_t> reference_generation(const ModelWeights& w, std::vector<int32_t> seq,
                                                 Sampler& sampler, int64_t n) {
  const int64_t vocab = w.config.vocab_size;
  std::vector<int32_t> out;
  while (static_cast<int64_t>(out.size()) < n) {
    const std::vector<float> l = test::dense_logits(w, seq);
    const int32_t t =
        sampler.sample(std::span<const float>(l.data() + l.size() - vocab, vocab), seq);
    out.push_back(t);
    seq.push_back(t);
    if (t == kEos) break;
  }
  return out;
}

/// A quantized checkpoint's weights (make-model --quant on the tiny preset of `arch`, with the toy
/// codec's vocabulary), loaded by load_model: the linear layers are what the stored AWQ / GPTQ /
/// FP8 tensors define (model/quant.h), dequantized to fp32 for the CPU backend.
inline ModelWeights quantized_session_model(Arch arch, QuantMethod method, int64_t group_size = 0,
                                            bool desc_act = false, bool sym = true,
                                            uint64_t seed = 7) {
  namespace fs = std::filesystem;
  const ModelPreset p = find_preset(arch, "tiny");
  ModelConfig c = p.config;
  c.vocab_size = kToyVocab;
  c.max_position_embeddings = 8192;
  nlohmann::json j = model_config_to_json(c);
  j["initializer_range"] = p.init_std;
  static int counter = 0;
  const fs::path dir =
      fs::temp_directory_path() /
      ("hogwild_quant_session_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "shape.json") << j.dump();
  MakeModelOptions o;
  o.arch = arch;
  o.config_file = (dir / "shape.json").string();
  o.seed = seed;
  o.out_dir = (dir / "model").string();
  o.show_progress = false;
  o.quant = method;
  o.group_size = group_size;
  o.desc_act = desc_act;
  o.sym = sym;
  make_model(o);
  ModelWeights w = load_model(o.out_dir, {.show_progress = false});
  fs::remove_all(dir);
  return w;
}

}  // namespace hogwild::testing
