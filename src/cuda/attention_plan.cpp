// Host-side attention planning (attention_plan.h).
#include "cuda/attention_plan.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace hogwild::cuda {

int32_t choose_chunk(int64_t total_keys, int64_t n_rows, int32_t num_key_value_heads,
                     int32_t target_ctas) {
  int64_t c = (total_keys * num_key_value_heads + target_ctas - 1) / std::max(target_ctas, 1);
  c = (c + kPageTokens - 1) / kPageTokens * kPageTokens;
  c = std::max<int64_t>(c, kPageTokens);
  if (n_rows > kAttnMaxRows) c = std::max<int64_t>(c, 1024);
  return static_cast<int32_t>(std::min<int64_t>(c, int64_t(1) << 30));
}

namespace {

// First key of the tile holding block b's first new key when chunks split there, else -1.
int64_t fresh_split(const PlanInput& in, size_t b) {
  const PlanBlock& blk = in.blocks[b];
  if (!in.split_fresh || blk.fresh_from >= blk.len) return -1;
  const int64_t at = blk.fresh_from / kPageTokens * kPageTokens;
  return at % in.chunk == 0 ? -1 : at;  // already a chunk start
}

// Chunks of block b whose first key is <= last.
int64_t chunks_through(const PlanInput& in, size_t b, int64_t last) {
  const int64_t split = fresh_split(in, b);
  return last / in.chunk + 1 + (split >= 0 && split <= last ? 1 : 0);
}

}  // namespace

int64_t row_entry_count(const PlanInput& in, int64_t r) {
  int64_t n = 0;
  for (const PlanOccurrence& oc : in.views[in.row_worker[r]]) {
    const int64_t len = in.blocks[oc.block].len;
    const int64_t limit = in.row_pos[r] - oc.offset;
    if (len == 0 || limit < 0) continue;
    n += chunks_through(in, oc.block, std::min(limit, len - 1));
  }
  return n;
}

HostPlan build_plan(const PlanInput& in, int64_t row_begin, int64_t row_end) {
  HOGWILD_CHECK(in.chunk > 0 && in.chunk % kPageTokens == 0);
  HOGWILD_CHECK(in.group >= 1 && in.group <= kAttnMaxRows);
  HOGWILD_CHECK(in.kv_heads >= 1 && in.kv_heads <= INT16_MAX);
  const int64_t n_rows = static_cast<int64_t>(in.row_worker.size());
  const int32_t pairs_per_item = kAttnMaxRows / in.group;
  HostPlan plan;
  std::vector<std::vector<int32_t>> row_entries(n_rows);

  // Pairs per block: (row, limit) for every occurrence of the block in the row's writer's view.
  std::vector<std::vector<AttnPair>> block_pairs(in.blocks.size());
  for (int64_t r = row_begin; r < row_end; ++r) {
    for (const PlanOccurrence& oc : in.views[in.row_worker[r]]) {
      const int64_t limit = in.row_pos[r] - oc.offset;
      if (in.blocks[oc.block].len == 0 || limit < 0) continue;
      block_pairs[oc.block].push_back({static_cast<int32_t>(r), static_cast<int32_t>(limit)});
    }
  }

  for (size_t b = 0; b < in.blocks.size(); ++b) {
    auto& bp = block_pairs[b];
    if (bp.empty()) continue;
    const int64_t len = in.blocks[b].len;
    const auto& pages = *in.blocks[b].pages;
    HOGWILD_CHECK(static_cast<int64_t>(pages.size()) * kPageTokens >= len);
    const int32_t page_base = static_cast<int32_t>(plan.pages.size());
    plan.pages.insert(plan.pages.end(), pages.begin(), pages.end());
    // Larger limits first: a chunk's pairs are then a prefix, and items group similar rows.
    std::stable_sort(bp.begin(), bp.end(),
                     [](const AttnPair& x, const AttnPair& y) { return x.limit > y.limit; });
    std::vector<int64_t> starts;
    for (int64_t ks = 0; ks < len; ks += in.chunk) starts.push_back(ks);
    if (const int64_t split = fresh_split(in, b); split >= 0)
      starts.insert(std::upper_bound(starts.begin(), starts.end(), split), split);
    for (size_t c = 0; c < starts.size(); ++c) {
      const int64_t ks = starts[c];
      const int64_t ke = c + 1 < starts.size() ? starts[c + 1] : len;
      size_t n_see = 0;
      while (n_see < bp.size() && bp[n_see].limit >= ks) ++n_see;
      for (size_t p0 = 0; p0 < n_see; p0 += pairs_per_item) {
        const size_t p1 = std::min(n_see, p0 + pairs_per_item);
        AttnItem it{};
        it.page_base = page_base;
        it.key_start = static_cast<int32_t>(ks);
        it.key_end = static_cast<int32_t>(std::min<int64_t>(ke, int64_t(bp[p0].limit) + 1));
        it.pair_start = static_cast<int32_t>(plan.pairs.size());
        it.pair_count = static_cast<int32_t>(p1 - p0);
        it.entry_start = plan.n_entries;
        it.fresh_from = static_cast<int32_t>(std::min<int64_t>(in.blocks[b].fresh_from, len));
        it.fresh_row = it.fresh_from < len ? static_cast<int32_t>(in.blocks[b].fresh_row) : -1;
        if (in.split_fresh && it.fresh_from < it.key_end &&
            (it.key_end - 1 - it.key_start) / kPageTokens >= kAttnFreshTiles)
          throw Error(fmt::format(
              "attention plan: block {} appends keys {}..{}, more than the fused append handles "
              "(its new keys must lie in {} tiles of {}); build the plan without split_fresh",
              b, it.fresh_from, len - 1, kAttnFreshTiles, kPageTokens));
        for (size_t k = p0; k < p1; ++k) {
          plan.pairs.push_back(bp[k]);
          row_entries[bp[k].row].push_back(plan.n_entries++);
        }
        plan.items.push_back(it);
      }
    }
  }

  // Longest chunks first: the kernel starts CTAs in item order, so short items (workers' steps)
  // fill in after the long ones instead of pushing long ones into a second wave.
  std::stable_sort(plan.items.begin(), plan.items.end(), [](const AttnItem& x, const AttnItem& y) {
    return x.key_end - x.key_start > y.key_end - y.key_start;
  });
  // Units (attention.h): one per KV head, or up to 4 / r16 heads of a one-tile item in one CTA.
  // A grouped unit takes longer than a one-head one, so grouping only pays where it saves a wave
  // of CTAs: it starts from the last items (the shortest) and stops as soon as the waves
  // (units / resident_ctas, rounded up) are as few as grouping every one-tile item would make them.
  const int64_t n_items = static_cast<int64_t>(plan.items.size());
  std::vector<int32_t> per(n_items, 1);
  auto heads_per_unit = [&](const AttnItem& it) {
    if (it.key_end - it.key_start > kPageTokens) return 1;
    const int32_t r16 = (it.pair_count * in.group + 15) / 16;
    return std::min({std::max(1, kAttnMaxRows / 16 / r16), kAttnMaxUnitHeads, in.kv_heads});
  };
  auto units_of = [&](int32_t k) { return (in.kv_heads + k - 1) / k; };
  int64_t n_units = n_items * in.kv_heads, fewest = n_units;
  for (const AttnItem& it : plan.items) fewest -= in.kv_heads - units_of(heads_per_unit(it));
  auto waves = [&](int64_t u) {  // without an SM count: group every one-tile item
    return in.resident_ctas > 0 ? (u + in.resident_ctas - 1) / in.resident_ctas : u;
  };
  for (int64_t i = n_items - 1; i >= 0 && waves(n_units) > waves(fewest); --i) {
    per[i] = heads_per_unit(plan.items[i]);
    n_units -= in.kv_heads - units_of(per[i]);
  }
  for (int64_t i = 0; i < n_items; ++i) {
    AttnUnit u{};
    u.it = plan.items[i];
    u.item = static_cast<int32_t>(i);
    const int32_t n_tiles = (u.it.key_end - u.it.key_start + kPageTokens - 1) / kPageTokens;
    for (int32_t t = 0; t < kAttnFreshTiles && t < n_tiles; ++t)
      u.page[t] = plan.pages[u.it.page_base + u.it.key_start / kPageTokens + t];
    for (int32_t h = 0; h < in.kv_heads; h += per[i]) {
      u.kv_head = static_cast<int16_t>(h);
      u.kv_heads = static_cast<int16_t>(std::min(per[i], in.kv_heads - h));
      plan.units.push_back(u);
    }
  }
  plan.row_entry_ptr.assign(n_rows + 1, 0);
  for (int64_t r = 0; r < n_rows; ++r) {
    plan.row_entry_ptr[r + 1] = plan.row_entry_ptr[r] + static_cast<int32_t>(row_entries[r].size());
    plan.row_entries.insert(plan.row_entries.end(), row_entries[r].begin(), row_entries[r].end());
  }
  return plan;
}

}  // namespace hogwild::cuda
