// Rotary position embedding (RoPE) parameters and rotation, as transformers computes them.
// Source: transformers/modeling_rope_utils.py (_compute_{default,linear_scaling,llama3,yarn}_
// rope_parameters) and LlamaRotaryEmbedding.forward / apply_rotary_pos_emb / rotate_half in
// transformers/models/llama/modeling_llama.py.
//
// Numerics follow HF: inv_freq is float32; the angle is float32(position) * inv_freq in float32;
// cos/sin of that float32 angle (evaluated in double, rounded to float32, i.e. within 1 ulp of
// torch's float32 cos/sin).
//
// Attention scaling (YaRN's attention_factor): HF multiplies cos and sin by it for q and for k,
// so q.k gets factor^2. Here the factor is an explicit argument: the backend applies it once when
// a key is written (at its block-local position) and once each time a query is rotated for a block
// occurrence (every occurrence starts from the un-rotated query). Rotations *by an offset* (key
// promotion) use scale 1: a pure rotation (docs/ARCHITECTURE.md §2).
#pragma once

#include <cstdint>
#include <vector>

#include "model/config.h"

namespace hogwild::cpu {

/// inv_freq and attention scaling of a model's RoPE.
struct RopeParams {
  int64_t head_dim = 0;            // values per head
  int64_t rotary_dim = 0;          // int(head_dim * partial_rotary_factor); rotated prefix, even
  std::vector<float> inv_freq;     // (rotary_dim / 2) radians per position, float32 as in HF
  float attention_scaling = 1.0f;  // multiplies cos and sin in the model's forward (yarn); else 1
};

/// Computes inv_freq and attention_scaling for rope_scaling.rope_type "default", "linear",
/// "llama3" or "yarn" from cfg (head_dim, partial_rotary_factor, rope_theta, rope_scaling,
/// max_position_embeddings). Throws hogwild::Error for an unknown rope_type, an odd rotary_dim or
/// non-positive parameters.
RopeParams compute_rope_params(const ModelConfig& cfg);

/// Table of cos/sin by integer position (unscaled), grown on demand.
class RopeTable {
 public:
  explicit RopeTable(RopeParams p) : p_(std::move(p)) {}
  const RopeParams& params() const { return p_; }
  /// Makes positions [0, n_positions) available. Not thread-safe; call before parallel use.
  void reserve(int64_t n_positions);
  int64_t size() const { return n_; }
  /// cos / sin of position pos (rotary_dim / 2 values each). PRECONDITION: 0 <= pos < size().
  const float* cos(int64_t pos) const { return cos_.data() + pos * half(); }
  const float* sin(int64_t pos) const { return sin_.data() + pos * half(); }
  int64_t half() const { return p_.rotary_dim / 2; }

  /// Rotates n_heads consecutive head vectors x (n_heads, head_dim) in place by position pos with
  /// rotate-half pairing (i, i + rotary_dim/2) over the first rotary_dim values; the rest pass
  /// through unchanged. cos and sin are multiplied by `scale` (attention_scaling for a model's
  /// first rotation, 1 for a pure rotation). PRECONDITION: 0 <= pos < size().
  void rotate(float* x, int64_t n_heads, int64_t pos, float scale) const;

 private:
  RopeParams p_;
  int64_t n_ = 0;
  std::vector<float> cos_, sin_;  // (n_, rotary_dim / 2)
};

}  // namespace hogwild::cpu
