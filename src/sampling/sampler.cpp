#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.h"
#include "core/request_fields.h"

namespace hogwild {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// HF RepetitionPenaltyLogitsProcessor: score < 0 -> score * penalty, else score / penalty, once per
// distinct token of the sequence.
void repetition_penalty(std::vector<float>& l, std::span<const int32_t> context, float penalty) {
  std::vector<int32_t> ids;
  for (int32_t id : context)
    if (id >= 0 && id < static_cast<int64_t>(l.size())) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  for (int32_t id : ids) l[id] = l[id] < 0 ? l[id] * penalty : l[id] / penalty;
}

// HF TopKLogitsWarper: remove scores strictly below the k-th largest (ties with it stay).
void top_k(std::vector<float>& l, int64_t k) {
  k = std::min<int64_t>(k, static_cast<int64_t>(l.size()));
  std::vector<float> v(l);
  std::nth_element(v.begin(), v.begin() + (k - 1), v.end(), std::greater<float>());
  const float kth = v[k - 1];
  for (float& x : l)
    if (x < kth) x = kNegInf;
}

// Indices of finite logits sorted ascending by value (ties by index), and their softmax.
void sorted_softmax(const std::vector<float>& l, std::vector<int32_t>& idx,
                    std::vector<double>& p) {
  idx.clear();
  for (int32_t i = 0; i < static_cast<int32_t>(l.size()); ++i)
    if (l[i] != kNegInf) idx.push_back(i);
  std::stable_sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) { return l[a] < l[b]; });
  p.resize(idx.size());
  if (idx.empty()) return;
  const double mx = l[idx.back()];
  double sum = 0;
  for (size_t i = 0; i < idx.size(); ++i)
    sum += (p[i] = std::exp(static_cast<double>(l[idx[i]]) - mx));
  for (double& x : p) x /= sum;
}

// HF TopPLogitsWarper: ascending sort, remove tokens whose cumulative probability is
// <= 1 - top_p; the most likely token always stays.
void top_p(std::vector<float>& l, float tp) {
  std::vector<int32_t> idx;
  std::vector<double> p;
  sorted_softmax(l, idx, p);
  double cum = 0;
  const double limit = 1.0 - static_cast<double>(tp);
  for (size_t i = 0; i + 1 < idx.size(); ++i) {
    cum += p[i];
    if (cum <= limit) l[idx[i]] = kNegInf;
  }
}

// HF MinPLogitsWarper: remove tokens with p < min_p * p_max (p/p_max = exp(l - l_max)); the most
// likely token always stays.
void min_p(std::vector<float>& l, float mp) {
  const float mx = *std::max_element(l.begin(), l.end());
  if (mx == kNegInf) return;
  for (float& x : l)
    if (x != kNegInf && std::exp(static_cast<double>(x) - mx) < mp) x = kNegInf;
}

}  // namespace

Rng::Rng(uint64_t seed) {
  uint64_t x = seed;
  for (auto& s : s_) s = splitmix64(x);
}

uint64_t Rng::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

SamplingParams SamplingParams::from(const GenerationConfig& g, uint64_t seed) {
  SamplingParams p;
  p.do_sample = g.do_sample;
  p.temperature = static_cast<float>(g.temperature);
  p.top_k = g.top_k;
  p.top_p = static_cast<float>(g.top_p);
  p.min_p = static_cast<float>(g.min_p);
  p.repetition_penalty = static_cast<float>(g.repetition_penalty);
  p.seed = seed;
  return p;
}

std::string SamplingParams::describe() const {
  std::string s = greedy()
                      ? std::string("greedy")
                      : fmt::format("temperature {:g}, top_k {}, top_p {:g}, min_p {:g}, seed {}",
                                    temperature, top_k, top_p, min_p, seed);
  if (repetition_penalty != 1.0f) s += fmt::format(", repetition_penalty {:g}", repetition_penalty);
  return s;
}

void check_sampling(const SamplingParams& p) {
  check_real_field(RequestField::temperature, p.temperature);
  check_field(RequestField::top_k, p.top_k);
  check_real_field(RequestField::top_p, p.top_p);
  check_real_field(RequestField::min_p, p.min_p);
  check_real_field(RequestField::repetition_penalty, p.repetition_penalty);
}

Sampler::Sampler(SamplingParams p) : p_(std::move(p)), rng_(p_.seed) { check_sampling(p_); }

void Sampler::process(std::vector<float>& l, std::span<const int32_t> context) const {
  for (int32_t id : p_.banned_tokens)
    if (id >= 0 && id < static_cast<int64_t>(l.size())) l[id] = kNegInf;
  if (p_.repetition_penalty != 1.0f) repetition_penalty(l, context, p_.repetition_penalty);
  if (p_.greedy()) return;
  if (p_.temperature != 1.0f)
    for (float& x : l) x /= p_.temperature;
  if (p_.top_k > 0) top_k(l, p_.top_k);
  if (p_.top_p < 1.0f) top_p(l, p_.top_p);
  if (p_.min_p > 0.0f) min_p(l, p_.min_p);
}

std::vector<float> Sampler::probabilities(std::span<const float> logits,
                                          std::span<const int32_t> context) const {
  std::vector<float> l(logits.begin(), logits.end());
  process(l, context);
  const float mx = *std::max_element(l.begin(), l.end());
  std::vector<float> p(l.size(), 0.0f);
  if (mx == kNegInf) return p;
  double sum = 0;
  for (float x : l) sum += std::exp(static_cast<double>(x) - mx);
  for (size_t i = 0; i < l.size(); ++i)
    p[i] = static_cast<float>(std::exp(static_cast<double>(l[i]) - mx) / sum);
  return p;
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> context) {
  if (logits.empty()) fail("sample: empty logits row");
  buf_.assign(logits.begin(), logits.end());
  process(buf_, context);
  // Argmax (first maximal index, as torch.argmax).
  const auto it = std::max_element(buf_.begin(), buf_.end());
  if (*it == kNegInf || std::isnan(*it))
    fail("sample: no token can be drawn (all logits are -inf/NaN after banned tokens and filters)");
  const int32_t best = static_cast<int32_t>(it - buf_.begin());
  if (p_.greedy()) return best;
  // Inverse CDF over the vocabulary in id order, in double.
  const double mx = *it;
  double sum = 0;
  for (float x : buf_) sum += std::exp(static_cast<double>(x) - mx);
  const double u = rng_.uniform() * sum;
  double cum = 0;
  int32_t last = best;
  for (int32_t i = 0; i < static_cast<int32_t>(buf_.size()); ++i) {
    if (buf_[i] == kNegInf) continue;
    cum += std::exp(static_cast<double>(buf_[i]) - mx);
    last = i;
    if (u < cum) return i;
  }
  return last;  // u rounded to the total
}

}  // namespace hogwild
