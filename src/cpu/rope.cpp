#include "cpu/rope.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace hogwild::cpu {
namespace {

constexpr double kPi = 3.14159265358979323846;

// HF: base ** (torch.arange(0, dim, 2).float() / dim), all float32.
std::vector<float> pos_freqs(double base, int64_t dim) {
  std::vector<float> f(dim / 2);
  const float fb = static_cast<float>(base);
  for (int64_t i = 0; i < dim / 2; ++i) {
    const float e = static_cast<float>(2 * i) / static_cast<float>(dim);
    f[i] = static_cast<float>(std::pow(static_cast<double>(fb), static_cast<double>(e)));
  }
  return f;
}

// _compute_default_rope_parameters: inv_freq = 1 / base^(2i/dim).
std::vector<float> default_inv_freq(double base, int64_t dim) {
  std::vector<float> f = pos_freqs(base, dim);
  for (float& x : f) x = 1.0f / x;
  return f;
}

// _compute_llama3_parameters (float32 tensor arithmetic, in HF's order of operations).
void apply_llama3(std::vector<float>& inv, const RopeScaling& rs, int64_t max_pos) {
  const float factor = static_cast<float>(rs.factor);
  const float lff = static_cast<float>(rs.low_freq_factor);
  const float hff = static_cast<float>(rs.high_freq_factor);
  const int64_t old_ctx =
      rs.original_max_position_embeddings > 0 ? rs.original_max_position_embeddings : max_pos;
  if (rs.high_freq_factor == rs.low_freq_factor)
    fail("rope_scaling llama3: high_freq_factor must differ from low_freq_factor; fix config.json");
  const float low_wl = static_cast<float>(static_cast<double>(old_ctx) / rs.low_freq_factor);
  const float high_wl = static_cast<float>(static_cast<double>(old_ctx) / rs.high_freq_factor);
  for (float& f : inv) {
    const float wavelen = static_cast<float>(2 * kPi) / f;
    float llama = wavelen > low_wl ? f / factor : f;
    const float smooth = (static_cast<float>(old_ctx) / wavelen - lff) / (hff - lff);
    const float smoothed = (1.0f - smooth) * llama / factor + smooth * llama;
    const bool medium = !(wavelen < high_wl) && !(wavelen > low_wl);
    f = medium ? smoothed : llama;
  }
}

// _compute_yarn_parameters: blend of interpolated (1/(factor*pos)) and extrapolated (1/pos)
// frequencies with a linear ramp between the dims of beta_fast and beta_slow rotations.
std::vector<float> yarn_inv_freq(double base, int64_t dim, const RopeScaling& rs, int64_t max_pos) {
  const double orig = rs.original_max_position_embeddings > 0
                          ? static_cast<double>(rs.original_max_position_embeddings)
                          : static_cast<double>(max_pos);
  auto correction_dim = [&](double n_rot) {
    return (static_cast<double>(dim) * std::log(orig / (n_rot * 2 * kPi))) / (2 * std::log(base));
  };
  double low = correction_dim(rs.beta_fast), high = correction_dim(rs.beta_slow);
  if (rs.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;  // HF: prevent singularity
  const float range = static_cast<float>(high - low);
  const float lowf = static_cast<float>(low);
  const float factor = static_cast<float>(rs.factor);
  const std::vector<float> pf = pos_freqs(base, dim);
  std::vector<float> inv(dim / 2);
  for (int64_t i = 0; i < dim / 2; ++i) {
    const float extrap = 1.0f / pf[i];
    const float interp = 1.0f / (factor * pf[i]);
    const float ramp = std::clamp((static_cast<float>(i) - lowf) / range, 0.0f, 1.0f);
    const float ef = 1.0f - ramp;  // inv_freq_extrapolation_factor
    inv[i] = interp * (1.0f - ef) + extrap * ef;
  }
  return inv;
}

}  // namespace

RopeParams compute_rope_params(const ModelConfig& cfg) {
  RopeParams p;
  p.head_dim = cfg.head_dim;
  p.rotary_dim =
      static_cast<int64_t>(static_cast<double>(cfg.head_dim) * cfg.partial_rotary_factor);
  if (p.rotary_dim <= 0 || p.rotary_dim % 2 != 0 || p.rotary_dim > cfg.head_dim)
    fail(
        "RoPE: rotary dim head_dim*partial_rotary_factor = {} must be even and in (0, "
        "head_dim={}]; "
        "fix head_dim or partial_rotary_factor in config.json",
        p.rotary_dim, cfg.head_dim);
  if (!(cfg.rope_theta > 1.0))
    fail("RoPE: rope_theta must be > 1 (got {}); fix config.json", cfg.rope_theta);
  const RopeScaling& rs = cfg.rope_scaling;
  const std::string& t = rs.rope_type;
  if (t != "default" && !(rs.factor > 0.0))
    fail("RoPE: rope_scaling.factor must be > 0 for rope_type '{}' (got {}); fix config.json", t,
         rs.factor);
  if (t == "default") {
    p.inv_freq = default_inv_freq(cfg.rope_theta, p.rotary_dim);
  } else if (t == "linear") {
    p.inv_freq = default_inv_freq(cfg.rope_theta, p.rotary_dim);
    for (float& f : p.inv_freq) f /= static_cast<float>(rs.factor);
  } else if (t == "llama3") {
    p.inv_freq = default_inv_freq(cfg.rope_theta, p.rotary_dim);
    apply_llama3(p.inv_freq, rs, cfg.max_position_embeddings);
  } else if (t == "yarn") {
    p.inv_freq = yarn_inv_freq(cfg.rope_theta, p.rotary_dim, rs, cfg.max_position_embeddings);
    // HF get_mscale(factor): 1 when factor <= 1, else 0.1*ln(factor) + 1; an explicit
    // attention_factor wins.
    const double af = rs.attention_factor > 0.0 ? rs.attention_factor
                      : rs.factor <= 1.0        ? 1.0
                                                : 0.1 * std::log(rs.factor) + 1.0;
    p.attention_scaling = static_cast<float>(af);
  } else {
    fail("RoPE: rope_type '{}' is not supported (supported: default, linear, llama3, yarn)", t);
  }
  return p;
}

void RopeTable::reserve(int64_t n_positions) {
  if (n_positions <= n_) return;
  const int64_t h = half();
  // Grow geometrically so decoding does not recompute the table every token.
  const int64_t n_new = std::max(n_positions, 2 * n_);
  cos_.resize(n_new * h);
  sin_.resize(n_new * h);
  for (int64_t pos = n_; pos < n_new; ++pos) {
    for (int64_t i = 0; i < h; ++i) {
      // HF: freqs = inv_freq.float() @ position.float() in float32, then cos/sin in float32.
      const float angle = static_cast<float>(pos) * p_.inv_freq[i];
      cos_[pos * h + i] = static_cast<float>(std::cos(static_cast<double>(angle)));
      sin_[pos * h + i] = static_cast<float>(std::sin(static_cast<double>(angle)));
    }
  }
  n_ = n_new;
}

void RopeTable::rotate(float* x, int64_t n_heads, int64_t pos, float scale) const {
  const int64_t h = half();
  const float* c = cos(pos);
  const float* s = sin(pos);
  for (int64_t head = 0; head < n_heads; ++head) {
    float* v = x + head * p_.head_dim;
    for (int64_t i = 0; i < h; ++i) {
      // rotate_half: x*cos + cat(-x2, x1)*sin with cos/sin = cat(freqs, freqs) * scale.
      const float x1 = v[i], x2 = v[i + h];
      const float ci = c[i] * scale, si = s[i] * scale;
      v[i] = x1 * ci - x2 * si;
      v[i + h] = x2 * ci + x1 * si;
    }
  }
}

}  // namespace hogwild::cpu
