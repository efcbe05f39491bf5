// CpuBackend::key_redundancy (kv/backend.h): R-KV's redundancy term of the KV budget (Cai et al.
// 2025, arXiv 2505.24133, §3 "redundancy estimation"), per chunk of a block's keys.
//
// Chunks, not tokens: the budget forgets whole chunks (hogwild/forgetting.h), and R-KV's pairwise
// similarity among n keys costs O(n^2 * head_dim) per layer and KV head; over chunks of 16 tokens
// that is 256 times less than over their tokens. The mean similarity to the others needs no
// matrix at all: with unit chunk keys c_i and S = sum_j c_j, sum_{j != i} c_i . c_j =
// c_i . S - |c_i|^2, so the cost is one pass over the chunks' keys, O(tokens * head_dim * layers *
// kv_heads), less than one forward reads.
//
// RoPE: keys are stored rotated at block-local positions, and R-KV too compares the cache's
// rotated keys. A rotation turns each frequency pair of a key by position * theta, so two equal
// keys far apart agree in their slow pairs and differ in their fast ones; the mean over a chunk's
// 16 positions already damps the fastest pairs. Near chunks thus look a little more alike than
// far ones with the same content; un-rotating would cost a rotation per key for a measure that
// attention itself does not see.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cpu/cpu_backend.h"

namespace hogwild::cpu {

namespace {

// x /= |x| (left as it is when its norm is 0).
void normalise(float* x, int64_t n) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  if (ss <= 0) return;
  const float inv = static_cast<float>(1.0 / std::sqrt(ss));
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

// The chunk's key at one layer and KV head: the mean of its kept keys, each normalised, then
// normalised itself; zero when no key of it is kept. keys: (len, hd) of that head; kept: (len),
// 1 for a token not forgotten.
void chunk_key(const float* keys, int64_t hd, std::pair<int64_t, int64_t> c,
               const std::vector<uint8_t>& kept, std::vector<float>& tmp, float* out) {
  std::fill(out, out + hd, 0.0f);
  for (int64_t j = c.first; j < c.second; ++j) {
    if (!kept[j]) continue;
    tmp.assign(keys + j * hd, keys + (j + 1) * hd);
    normalise(tmp.data(), hd);
    for (int64_t d = 0; d < hd; ++d) out[d] += tmp[d];
  }
  normalise(out, hd);
}

}  // namespace

std::vector<float> CpuBackend::key_redundancy(
    BlockId b, const std::vector<std::pair<int64_t, int64_t>>& chunks) const {
  const std::vector<uint8_t> kept = table_.kept_mask(b, chunks, "key_redundancy");
  const int64_t n = static_cast<int64_t>(chunks.size());
  std::vector<float> out(static_cast<size_t>(n), 0.0f);
  if (n < 2) return out;
  const ModelConfig& c = w_.config;
  const int64_t hd = c.head_dim, heads = c.num_hidden_layers * c.num_key_value_heads;
  std::vector<float> keys(static_cast<size_t>(n * hd)), sum(static_cast<size_t>(hd)), tmp;
  std::vector<double> acc(static_cast<size_t>(n), 0.0);
  for (int64_t lg = 0; lg < heads; ++lg) {  // [layer * num_key_value_heads + kv head]
    const float* k = blocks_[b].k[lg].data();
    std::fill(sum.begin(), sum.end(), 0.0f);
    for (int64_t i = 0; i < n; ++i) {
      chunk_key(k, hd, chunks[i], kept, tmp, &keys[i * hd]);
      for (int64_t d = 0; d < hd; ++d) sum[d] += keys[i * hd + d];
    }
    for (int64_t i = 0; i < n; ++i) {
      double dot = 0, self = 0;  // c_i . S and |c_i|^2
      for (int64_t d = 0; d < hd; ++d) {
        dot += static_cast<double>(keys[i * hd + d]) * sum[d];
        self += static_cast<double>(keys[i * hd + d]) * keys[i * hd + d];
      }
      acc[i] += (dot - self) / static_cast<double>(n - 1);
    }
  }
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(acc[i] / static_cast<double>(heads));
  return out;
}

}  // namespace hogwild::cpu
