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

// Block blk's keys in chunks of `chunk` (and one more chunk start at `split` when >= 0), with its
// gaps cut out: block_pieces.
std::vector<std::pair<int64_t, int64_t>> pieces_of(const PlanBlock& blk, int64_t chunk,
                                                   int64_t split) {
  std::vector<int64_t> starts;
  for (int64_t ks = 0; ks < blk.len; ks += chunk) starts.push_back(ks);
  if (split >= 0) starts.insert(std::upper_bound(starts.begin(), starts.end(), split), split);
  static const std::vector<std::pair<int64_t, int64_t>> kNone;
  const auto& gaps = blk.gaps ? *blk.gaps : kNone;
  std::vector<std::pair<int64_t, int64_t>> pieces;
  size_t g = 0;  // first gap that ends after s
  for (size_t c = 0; c < starts.size(); ++c) {
    const int64_t ke = c + 1 < starts.size() ? starts[c + 1] : blk.len;
    for (int64_t s = starts[c]; s < ke;) {
      while (g < gaps.size() && gaps[g].second <= s) ++g;
      if (g < gaps.size() && gaps[g].first <= s) {  // s is forgotten: go to the gap's end
        s = gaps[g].second;
        continue;
      }
      const int64_t e = g < gaps.size() ? std::min(ke, gaps[g].first) : ke;
      pieces.emplace_back(s, e);
      s = e;
    }
  }
  return pieces;
}

// Per block of `in`: the pairs (row, limit) of every row in [row_begin, row_end) and every
// occurrence of the block in its writer's view that sees a key of it, largest limit first
// (stable: in row order, then view order, among equal limits).
std::vector<std::vector<AttnPair>> block_pairs(const PlanInput& in, int64_t row_begin,
                                               int64_t row_end) {
  std::vector<std::vector<AttnPair>> bp(in.blocks.size());
  for (int64_t r = row_begin; r < row_end; ++r)
    for (const PlanOccurrence& oc : in.views[in.row_worker[r]]) {
      const int64_t limit = in.row_pos[r] - oc.offset;
      if (in.blocks[oc.block].len == 0 || limit < 0) continue;
      bp[oc.block].push_back({static_cast<int32_t>(r), static_cast<int32_t>(limit)});
    }
  for (auto& v : bp)
    std::stable_sort(v.begin(), v.end(),
                     [](const AttnPair& x, const AttnPair& y) { return x.limit > y.limit; });
  return bp;
}

}  // namespace

std::vector<std::pair<int64_t, int64_t>> block_pieces(const PlanInput& in, size_t b) {
  return pieces_of(in.blocks[b], in.chunk, fresh_split(in, b));
}

HostScorePlan build_score_plan(const PlanInput& in, const std::vector<ScoreBlockIn>& blocks) {
  HostScorePlan plan;
  const auto pairs = block_pairs(in, 0, static_cast<int64_t>(in.row_worker.size()));
  for (const ScoreBlockIn& sb : blocks) {
    plan.out.push_back(plan.n_scores);
    const int64_t out = plan.n_scores;
    plan.n_scores += sb.len;
    if (sb.block < 0) continue;  // no view holds it: every score stays 0
    const PlanBlock& blk = in.blocks[sb.block];
    HOGWILD_CHECK(blk.len == sb.len && out + sb.len <= INT32_MAX);
    const std::vector<AttnPair>& bp = pairs[sb.block];
    const int32_t pair_start = static_cast<int32_t>(plan.pairs.size());
    plan.pairs.insert(plan.pairs.end(), bp.begin(), bp.end());
    for (const auto& [from, pe] : pieces_of(blk, kPageTokens, -1)) {
      int32_t n_see = 0;
      while (n_see < static_cast<int32_t>(bp.size()) && bp[n_see].limit >= from) ++n_see;
      if (n_see == 0) continue;
      ScoreTile t{};
      t.page = (*blk.pages)[from / kPageTokens];
      t.key_start = static_cast<int32_t>(from / kPageTokens * kPageTokens);
      t.key_from = static_cast<int32_t>(from);
      t.key_end = static_cast<int32_t>(std::min<int64_t>(pe, int64_t(bp[0].limit) + 1));
      t.out = static_cast<int32_t>(out);
      t.pair_start = pair_start;
      t.pair_count = n_see;
      plan.tiles.push_back(t);
    }
  }
  return plan;
}

std::vector<int64_t> row_entry_counts(const PlanInput& in) {
  // Per block, its pieces' first keys: row r gets one entry per piece of each occurrence whose
  // first key is <= its limit (build_plan).
  std::vector<std::vector<int64_t>> froms(in.blocks.size());
  for (size_t b = 0; b < in.blocks.size(); ++b)
    for (const auto& [from, end] : block_pieces(in, b)) froms[b].push_back(from);
  std::vector<int64_t> counts(in.row_worker.size(), 0);
  for (size_t r = 0; r < counts.size(); ++r)
    for (const PlanOccurrence& oc : in.views[in.row_worker[r]]) {
      const int64_t limit = in.row_pos[r] - oc.offset;
      if (limit < 0) continue;
      const auto& f = froms[oc.block];
      counts[r] += std::upper_bound(f.begin(), f.end(), limit) - f.begin();
    }
  return counts;
}

namespace {

// The fresh keys of item `it` of block b must lie in the tiles the fused append writes.
void check_fresh_tiles(const PlanInput& in, size_t b, const AttnItem& it) {
  const int64_t len = in.blocks[b].len;
  if (in.split_fresh && it.fresh_from < it.key_end &&
      (it.key_end - 1 - it.key_start) / kPageTokens >= kAttnFreshTiles)
    throw Error(fmt::format(
        "attention plan: block {} appends keys {}..{}, more than the fused append handles "
        "(its new keys must lie in {} tiles of {}); build the plan without split_fresh",
        b, it.fresh_from, len - 1, kAttnFreshTiles, kPageTokens));
}

// Block b's items: per piece of its keys, the pairs `bp` (largest limit first) that see a key of
// the piece, at most kAttnMaxRows / group of them per item; each pair is an entry of its row.
void add_block_items(const PlanInput& in, size_t b, const std::vector<AttnPair>& bp, HostPlan& plan,
                     std::vector<std::vector<int32_t>>& row_entries) {
  const int32_t pairs_per_item = kAttnMaxRows / in.group;
  const int64_t len = in.blocks[b].len;
  const auto& pages = *in.blocks[b].pages;
  HOGWILD_CHECK(static_cast<int64_t>(pages.size()) * kPageTokens >= len);
  const int32_t page_base = static_cast<int32_t>(plan.pages.size());
  plan.pages.insert(plan.pages.end(), pages.begin(), pages.end());
  for (const auto& [from, pe] : block_pieces(in, b)) {
    size_t n_see = 0;
    while (n_see < bp.size() && bp[n_see].limit >= from) ++n_see;
    for (size_t p0 = 0; p0 < n_see; p0 += pairs_per_item) {
      const size_t p1 = std::min(n_see, p0 + pairs_per_item);
      AttnItem it{};
      it.page_base = page_base;
      it.key_start = static_cast<int32_t>(from / kPageTokens * kPageTokens);
      it.key_from = static_cast<int32_t>(from);
      it.key_end = static_cast<int32_t>(std::min<int64_t>(pe, int64_t(bp[p0].limit) + 1));
      it.pair_start = static_cast<int32_t>(plan.pairs.size());
      it.pair_count = static_cast<int32_t>(p1 - p0);
      it.entry_start = plan.n_entries;
      it.fresh_from = static_cast<int32_t>(std::min<int64_t>(in.blocks[b].fresh_from, len));
      it.fresh_row = it.fresh_from < len ? static_cast<int32_t>(in.blocks[b].fresh_row) : -1;
      check_fresh_tiles(in, b, it);
      for (size_t k = p0; k < p1; ++k) {
        plan.pairs.push_back(bp[k]);
        row_entries[bp[k].row].push_back(plan.n_entries++);
      }
      plan.items.push_back(it);
    }
  }
}

// Per item of `items` (longest first), the KV heads one unit of it takes (attention.h): 1, or up
// to 4 / r16 heads of a one-tile item in one CTA. A grouped unit takes longer than a one-head one,
// so grouping only pays where it saves a wave of CTAs: it starts from the last items (the
// shortest) and stops as soon as the waves (units / resident_ctas, rounded up) are as few as
// grouping every one-tile item would make them.
std::vector<int32_t> heads_per_unit(const PlanInput& in, const std::vector<AttnItem>& items) {
  const int64_t n_items = static_cast<int64_t>(items.size());
  std::vector<int32_t> per(n_items, 1);
  auto grouped = [&](const AttnItem& it) {
    if (it.key_end - it.key_start > kPageTokens) return 1;
    const int32_t r16 = (it.pair_count * in.group + 15) / 16;
    return std::min({std::max(1, kAttnMaxRows / 16 / r16), kAttnMaxUnitHeads, in.kv_heads});
  };
  auto units_of = [&](int32_t k) { return (in.kv_heads + k - 1) / k; };
  int64_t n_units = n_items * in.kv_heads, fewest = n_units;
  for (const AttnItem& it : items) fewest -= in.kv_heads - units_of(grouped(it));
  auto waves = [&](int64_t u) {  // without an SM count: group every one-tile item
    return in.resident_ctas > 0 ? (u + in.resident_ctas - 1) / in.resident_ctas : u;
  };
  for (int64_t i = n_items - 1; i >= 0 && waves(n_units) > waves(fewest); --i) {
    per[i] = grouped(items[i]);
    n_units -= in.kv_heads - units_of(per[i]);
  }
  return per;
}

// The plan's units: item i's KV heads in units of per[i] heads, each with its first tiles' pages.
void add_units(const PlanInput& in, const std::vector<int32_t>& per, HostPlan& plan) {
  const int64_t n_items = static_cast<int64_t>(plan.items.size());
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
}

// Every row's entries, row after row, and where each row's begin (CSR).
void add_row_entries(const std::vector<std::vector<int32_t>>& row_entries, HostPlan& plan) {
  const int64_t n_rows = static_cast<int64_t>(row_entries.size());
  plan.row_entry_ptr.assign(n_rows + 1, 0);
  for (int64_t r = 0; r < n_rows; ++r) {
    plan.row_entry_ptr[r + 1] = plan.row_entry_ptr[r] + static_cast<int32_t>(row_entries[r].size());
    plan.row_entries.insert(plan.row_entries.end(), row_entries[r].begin(), row_entries[r].end());
  }
}

}  // namespace

HostPlan build_plan(const PlanInput& in, int64_t row_begin, int64_t row_end) {
  HOGWILD_CHECK(in.chunk > 0 && in.chunk % kPageTokens == 0);
  HOGWILD_CHECK(in.group >= 1 && in.group <= kAttnMaxRows);
  HOGWILD_CHECK(in.kv_heads >= 1 && in.kv_heads <= INT16_MAX);
  HostPlan plan;
  std::vector<std::vector<int32_t>> row_entries(in.row_worker.size());
  // Larger limits first: a chunk's pairs are then a prefix, and items group similar rows.
  const auto pairs = block_pairs(in, row_begin, row_end);
  for (size_t b = 0; b < in.blocks.size(); ++b)
    if (!pairs[b].empty()) add_block_items(in, b, pairs[b], plan, row_entries);
  // Longest chunks first: the kernel starts CTAs in item order, so short items (workers' steps)
  // fill in after the long ones instead of pushing long ones into a second wave.
  std::stable_sort(plan.items.begin(), plan.items.end(), [](const AttnItem& x, const AttnItem& y) {
    return x.key_end - x.key_start > y.key_end - y.key_start;
  });
  add_units(in, heads_per_unit(in, plan.items), plan);
  add_row_entries(row_entries, plan);
  return plan;
}

}  // namespace hogwild::cuda
