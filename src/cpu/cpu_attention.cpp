// CpuBackend::attention: one layer's attention of every row of a forward over its writer's view
// (docs/ARCHITECTURE.md §2: queries rotated per block occurrence, forgotten ranges skipped, partial
// states merged by log-sum-exp).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "cpu/cpu_backend.h"
#include "cpu/ops.h"
#include "cpu/parallel.h"
#include "cpu/skinny.h"

namespace hogwild::cpu {

// Work per (row t, key/value head g): the group of query heads that share g read each key once.
// Items are (g, run of consecutive rows). Rows of one problem begin their views with the same
// blocks (header, prompt, finished steps), each fully visible to each of them: these leading
// occurrences are attended by all rows of the run together, one attn_partial over the rows'
// stacked queries (each rotated by its own p - o), so every key is read once for the run; the
// rest of each row's view follows row by row. A row's states see the same partial updates in
// the same order either way (attn_partial's per-head results do not depend on the other
// queries of a call), so the bits do not depend on the batch. Runs are as long as ~4 items per
// thread allow. Per-thread scratch: the run's rotated queries, states and their outputs.
class CpuBackend::AttentionPass {
 public:
  // q: (rows, num_attention_heads * head_dim) projected queries; out: the same shape, written.
  AttentionPass(CpuBackend& be, const ForwardBatch& batch, const ForwardPlan& plan, int64_t layer,
                const float* q, float* out)
      : be_(be),
        batch_(batch),
        plan_(plan),
        layer_(layer),
        q_(q),
        out_(out),
        T_(static_cast<int64_t>(batch.tokens.size())),
        nh_(be.w_.config.num_attention_heads),
        hd_(be.w_.config.head_dim),
        nkv_(be.w_.config.num_key_value_heads),
        group_(nh_ / nkv_),
        scale_(1.0f / std::sqrt(static_cast<float>(hd_))),
        attn_scaling_(be.rope_.params().attention_scaling),
        n_threads_(num_threads()),
        run_(std::clamp<int64_t>(T_ * nkv_ / (4 * static_cast<int64_t>(n_threads_)), 1, T_)),
        per_thread_(static_cast<size_t>(run_ * group_ * hd_)),
        scratch_(static_cast<size_t>(n_threads_) * 2 * per_thread_),
        states_(static_cast<size_t>(n_threads_) * run_ * group_) {}

  void run() {
    const int64_t n_runs = (T_ + run_ - 1) / run_;
    parallel_for(n_runs * nkv_, [&](int64_t idx, int thread) {
      const int64_t g = idx / n_runs, r0 = idx % n_runs * run_, r1 = std::min(T_, r0 + run_);
      // Sub-runs of rows whose views start with the same block (one problem's rows).
      for (int64_t t0 = r0; t0 < r1;) {
        int64_t t1 = t0 + 1;
        const auto& v0 = view_of(t0);
        while (t1 < r1 && !v0.empty() && !view_of(t1).empty() &&
               view_of(t1)[0].block == v0[0].block)
          ++t1;
        attend(t0, t1, g, thread);
        t0 = t1;
      }
    });
  }

 private:
  // Rows [t0, t1) of key/value head g on one thread, with that thread's scratch.
  struct Item {
    int64_t t0, t1, g;
    int thread;
    float* qr;       // (t1 - t0, group, head_dim) the rows' queries, rotated for one occurrence
    AttnState* acc;  // (t1 - t0, group) the rows' running states
  };

  const std::vector<ViewOccurrence>& view_of(int64_t t) const {
    return plan_.views[batch_.tokens[t].worker];
  }
  // Post-append length of block b.
  int64_t keys(BlockId b, int64_t g) const {
    return static_cast<int64_t>(be_.blocks_[b].k[layer_ * nkv_ + g].size()) / hd_;
  }
  const float* k_of(BlockId b, int64_t g) const {
    return be_.blocks_[b].k[layer_ * nkv_ + g].data();
  }
  const float* v_of(BlockId b, int64_t g) const {
    return be_.blocks_[b].v[layer_ * nkv_ + g].data();
  }

  // Calls f(s, e) for every run [s, e) of keys below n of block b that is not forgotten
  // (ForwardPlan::gaps); one run [0, n) when nothing is.
  template <typename F>
  void for_kept(BlockId b, int64_t n, F&& f) const {
    const auto* gaps = plan_.gaps_of(b);
    if (!gaps) {
      f(int64_t{0}, n);
      return;
    }
    int64_t s = 0;
    for (const auto& [gs, ge] : *gaps) {
      if (gs >= n) break;
      if (gs > s) f(s, gs);
      s = std::max(s, ge);
    }
    if (s < n) f(s, n);
  }

  // Queries of row t rotated by p - o into its slice of qr (with the model's attention
  // scaling: its one rotation for this dot product); keys are already rotated at j, so
  // q(p-o).k(j) = q(p).k(o+j).
  void rotate_row(const Item& it, int64_t t, int64_t o) const {
    float* dst = it.qr + (t - it.t0) * group_ * hd_;
    std::memcpy(dst, q_ + t * nh_ * hd_ + it.g * group_ * hd_, sizeof(float) * group_ * hd_);
    be_.rope_.rotate(dst, group_, plan_.position[t] - o, attn_scaling_);
  }

  // States init, the shared leading occurrences together, the rest row by row, normalised into
  // `out`.
  void attend(int64_t t0, int64_t t1, int64_t g, int thread) {
    Item it{t0,
            t1,
            g,
            thread,
            scratch_.data() + static_cast<size_t>(thread) * 2 * per_thread_,
            states_.data() + static_cast<size_t>(thread) * run_ * group_};
    float* ob = it.qr + per_thread_;
    const int64_t n = t1 - t0;
    for (int64_t i = 0; i < n * group_; ++i) {
      it.acc[i] = {0, 0, ob + i * hd_};
      attn_state_init(it.acc[i], hd_);
    }
    const size_t k = attend_shared(it);
    for (int64_t t = t0; t < t1; ++t) {
      attend_row(it, t, k);
      add_scores(it, t);
      // The token's own key (o + j = p) is always visible, so no state is empty.
      for (int64_t i = 0; i < group_; ++i)
        attn_state_normalize(it.acc[(t - t0) * group_ + i],
                             out_ + t * nh_ * hd_ + (g * group_ + i) * hd_, hd_);
    }
  }

  // The leading occurrences that every row of the item sees whole at the same index, attended
  // by all rows together; returns how many.
  size_t attend_shared(const Item& it) const {
    const int64_t n = it.t1 - it.t0;
    size_t k = 0;
    for (;; ++k) {
      const std::vector<ViewOccurrence>& v0 = view_of(it.t0);
      if (n < 2 || k >= v0.size()) break;
      const BlockId b = v0[k].block;
      const int64_t len = keys(b, it.g);
      bool shared = len > 0;
      for (int64_t t = it.t0; t < it.t1 && shared; ++t) {
        const std::vector<ViewOccurrence>& v = view_of(t);
        shared = k < v.size() && v[k].block == b && plan_.position[t] - v[k].offset + 1 >= len;
      }
      if (!shared) break;
      for (int64_t t = it.t0; t < it.t1; ++t) rotate_row(it, t, view_of(t)[k].offset);
      for_kept(b, len, [&](int64_t s, int64_t e) {
        attn_partial(it.qr, n * group_, k_of(b, it.g) + s * hd_, v_of(b, it.g) + s * hd_, e - s,
                     hd_, hd_, scale_, it.acc);
      });
    }
    return k;
  }

  // Row t over the occurrences of its view from index k on, up to what its position sees.
  void attend_row(const Item& it, int64_t t, size_t k) const {
    const int64_t p = plan_.position[t];
    const std::vector<ViewOccurrence>& v = view_of(t);
    for (size_t i = k; i < v.size(); ++i) {
      const ViewOccurrence& oc = v[i];
      if (oc.offset > p) break;  // offsets grow along the view: nothing further is visible
      const int64_t n_vis = std::min(keys(oc.block, it.g), p - oc.offset + 1);  // o + j <= p
      if (n_vis <= 0) continue;
      rotate_row(it, t, oc.offset);
      for_kept(oc.block, n_vis, [&](int64_t s, int64_t e) {
        attn_partial(it.qr + (t - it.t0) * group_ * hd_, group_, k_of(oc.block, it.g) + s * hd_,
                     v_of(oc.block, it.g) + s * hd_, e - s, hd_, hd_, scale_,
                     it.acc + (t - it.t0) * group_);
      });
    }
  }

  // Scores (ForwardBatch::score_blocks): every visible kept key's softmax weight, from row t's
  // final max and denominator, kept as the thread's maximum.
  void add_scores(const Item& it, int64_t t) const {
    const int64_t p = plan_.position[t];
    const std::vector<ViewOccurrence>& v = view_of(t);
    for (size_t si = 0; si < batch_.score_blocks.size(); ++si) {
      const BlockId sb = batch_.score_blocks[si];
      float* best = be_.score_acc_[it.thread][si].data();
      for (const ViewOccurrence& oc : v) {
        if (oc.block != sb || oc.offset > p) continue;
        const int64_t n_vis = std::min(keys(sb, it.g), p - oc.offset + 1);
        rotate_row(it, t, oc.offset);
        const float* qt = it.qr + (t - it.t0) * group_ * hd_;
        const float* kb = k_of(sb, it.g);
        // The dots as attn_partial takes them (skinny_dots, 64 keys by up to 16 heads).
        for_kept(sb, n_vis, [&](int64_t s, int64_t e) {
          float w[16 * 64];
          for (int64_t h0 = 0; h0 < group_; h0 += 16) {
            const int64_t nq = std::min<int64_t>(16, group_ - h0);
            for (int64_t j0 = s; j0 < e; j0 += 64) {
              const int64_t nk = std::min<int64_t>(64, e - j0);
              skinny_dots({qt + h0 * hd_, nq, hd_, kb + j0 * hd_, hd_, nullptr, w, 64}, nk);
              for (int64_t i = 0; i < nq; ++i) {
                const AttnState& st = it.acc[(t - it.t0) * group_ + h0 + i];
                for (int64_t j = 0; j < nk; ++j)
                  best[j0 + j] =
                      std::max(best[j0 + j], std::exp(w[i * 64 + j] * scale_ - st.m) / st.d);
              }
            }
          }
        });
      }
    }
  }

  CpuBackend& be_;
  const ForwardBatch& batch_;
  const ForwardPlan& plan_;
  const int64_t layer_;
  const float* q_;
  float* out_;
  const int64_t T_, nh_, hd_, nkv_, group_;
  const float scale_, attn_scaling_;
  const int n_threads_;
  const int64_t run_;
  const size_t per_thread_;
  std::vector<float> scratch_;     // [thread] -> rotated queries, then state outputs
  std::vector<AttnState> states_;  // [thread] -> (run, group)
};

void CpuBackend::attention(const ForwardBatch& batch, const ForwardPlan& plan, int64_t layer,
                           const float* q, float* out) {
  AttentionPass(*this, batch, plan, layer, q, out).run();
}

}  // namespace hogwild::cpu
