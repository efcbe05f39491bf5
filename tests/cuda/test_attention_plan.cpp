// The host-side attention plan (cuda/attention_plan.h) by hand: which items, units and entries a
// batch gets, the fused append's chunk split, and the KV budget's forgotten ranges (gaps) cut out
// of every item and score tile. Host-only: these run without a GPU (in CI).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.h"
#include "cuda/attention_plan.h"

namespace hogwild::test {
namespace {

using cuda::kPageTokens;
using Ranges = std::vector<std::pair<int64_t, int64_t>>;

// Host-only (runs without a GPU): each item carries its block's fresh_from, clamped to the block
// length, so the kernel loads only tiles of keys older than this forward before pdl_wait.
TEST(AttentionPlan, ItemsCarryTheirBlocksFreshFrom) {
  const std::vector<int32_t> pages_a = {3, 1, 4, 0}, pages_b = {2};
  cuda::PlanInput pin;
  pin.blocks.push_back({200, &pages_a, 198});  // two tokens appended by this forward
  pin.blocks.push_back({10, &pages_b});        // default: nothing appended
  pin.views = {{{0, 0}, {1, 200}}};
  pin.row_worker = {0, 0};
  pin.row_pos = {208, 209};
  pin.group = 4;
  pin.kv_heads = 2;
  pin.chunk = 64;
  const cuda::HostPlan hp = cuda::build_plan(pin, 0, 2);
  ASSERT_EQ(hp.items.size(), 5u);  // block 0: chunks of 64 -> 4 items; block 1: 1 item
  int from_a = 0, from_b = 0;
  for (const cuda::AttnItem& it : hp.items) {
    if (it.page_base == 0) {
      EXPECT_EQ(it.fresh_from, 198) << "key_start " << it.key_start;
      ++from_a;
    } else {
      EXPECT_EQ(it.fresh_from, 10);
      ++from_b;
    }
  }
  EXPECT_EQ(from_a, 4);
  EXPECT_EQ(from_b, 1);
}

// Host-only: a chunk of several tiles gets one unit per KV head; a one-tile item puts
// 4 / (its 16-row tiles) KV heads in a unit (the last unit takes the rest), and every (item, KV
// head) is in exactly one unit. Without an SM count every one-tile item is grouped.
TEST(AttentionPlan, OneTileItemsPutSeveralKvHeadsInAUnit) {
  const std::vector<int32_t> long_pages = {0, 1, 2}, step_pages[3] = {{3}, {4}, {5}};
  for (int32_t kvh : {8, 5, 1}) {
    cuda::PlanInput pin;
    pin.blocks.push_back({150, &long_pages});    // 3 tiles: one unit per head
    pin.blocks.push_back({64, &step_pages[0]});  // seen by 4 rows x G 4 = 16 rows: 1 row tile
    pin.blocks.push_back({10, &step_pages[1]});  // seen by 8 rows x G 4 = 32 rows: 2 row tiles
    pin.blocks.push_back({30, &step_pages[2]});  // seen by 12 rows x G 4 = 48 rows: 3 row tiles
    pin.views = {{{0, 0}, {1, 150}}, {{0, 0}, {2, 150}}, {{0, 0}, {3, 150}}};
    for (int w = 0; w < 3; ++w)
      for (int k = 0; k < 4 * (w + 1); ++k) {
        pin.row_worker.push_back(w);
        pin.row_pos.push_back(150 + k);
      }
    pin.group = 4;
    pin.kv_heads = kvh;
    pin.chunk = 256;
    const cuda::HostPlan hp = cuda::build_plan(pin, 0, static_cast<int64_t>(pin.row_pos.size()));
    ASSERT_EQ(hp.items.size(), 5u);  // block 0's 24 pairs in two items of <= 64 / G
    std::vector<std::vector<int>> seen(hp.items.size(), std::vector<int>(kvh, 0));
    std::vector<std::vector<int>> sizes(hp.items.size());
    for (const cuda::AttnUnit& u : hp.units) {
      ASSERT_GE(u.item, 0);
      ASSERT_LT(u.item, static_cast<int32_t>(hp.items.size()));
      sizes[u.item].push_back(u.kv_heads);
      for (int h = u.kv_head; h < u.kv_head + u.kv_heads; ++h) ++seen[u.item][h];
      // The unit's copy of its item, and the page ids of the item's first tiles (the prologue's)
      // by hand: the long block's {0, 1, 2}; the steps seen by 16 / 32 / 48 rows: {3}, {4}, {5}.
      const cuda::AttnItem& it = hp.items[u.item];
      EXPECT_EQ(std::memcmp(&u.it, &it, sizeof it), 0) << "unit of item " << u.item;
      const std::vector<int32_t> want =
          it.key_end - it.key_start > kPageTokens
              ? std::vector<int32_t>{0, 1, 2}
              : std::vector<int32_t>{2 + (it.pair_count * 4 + 15) / 16, 0, 0};
      EXPECT_EQ(std::vector<int32_t>(u.page, u.page + cuda::kAttnFreshTiles), want)
          << "item " << u.item;
    }
    for (size_t i = 0; i < hp.items.size(); ++i) {
      for (int h = 0; h < kvh; ++h) EXPECT_EQ(seen[i][h], 1) << "item " << i << " head " << h;
      const cuda::AttnItem& it = hp.items[i];
      const int r16 = (it.pair_count * 4 + 15) / 16;
      std::vector<int> want;
      const int per = it.key_end - it.key_start > kPageTokens ? 1 : 4 / r16;
      for (int h = 0; h < kvh; h += per) want.push_back(std::min(per, kvh - h));
      EXPECT_EQ(sizes[i], want) << "item " << i << " keys " << it.key_start << ".." << it.key_end;
    }
    // By hand for 8 KV heads: the long block 8 x 1; rows of 1, 2, 3 row tiles: 4 + 4, 2 x 4, 8 x 1.
    if (kvh == 8) {
      std::vector<std::vector<int>> by_rows(5);
      for (size_t i = 0; i < hp.items.size(); ++i)
        by_rows[hp.items[i].key_end - hp.items[i].key_start > kPageTokens
                    ? 0
                    : (hp.items[i].pair_count * 4 + 15) / 16] = sizes[i];
      EXPECT_EQ(by_rows[0], std::vector<int>(8, 1));
      EXPECT_EQ(by_rows[1], (std::vector<int>{4, 4}));
      EXPECT_EQ(by_rows[2], (std::vector<int>{2, 2, 2, 2}));
      EXPECT_EQ(by_rows[3], std::vector<int>(8, 1));
      // With the SM count known, grouping starts from the shortest item and stops once the waves
      // are as few as grouping all would make them: 40 units of one head, 30 at the fewest.
      // 40 resident: 1 wave already; 34: the 16-row item in 2 units (34 units, 1 wave); 33: the
      // 32-row item too (30); 20: 2 waves either way, no grouping.
      for (auto [resident, want_rows1, want_rows2] :
           {std::tuple<int32_t, std::vector<int>, std::vector<int>>{40, std::vector<int>(8, 1),
                                                                    std::vector<int>(8, 1)},
            {34, {4, 4}, std::vector<int>(8, 1)},
            {33, {4, 4}, {2, 2, 2, 2}},
            {20, std::vector<int>(8, 1), std::vector<int>(8, 1)}}) {
        pin.resident_ctas = resident;
        const cuda::HostPlan hr =
            cuda::build_plan(pin, 0, static_cast<int64_t>(pin.row_pos.size()));
        std::vector<std::vector<int>> got(5);
        for (const cuda::AttnUnit& u : hr.units) {
          const cuda::AttnItem& it = hr.items[u.item];
          if (it.key_end - it.key_start <= kPageTokens)
            got[(it.pair_count * 4 + 15) / 16].push_back(u.kv_heads);
        }
        EXPECT_EQ(got[1], want_rows1) << "resident " << resident;
        EXPECT_EQ(got[2], want_rows2) << "resident " << resident;
      }
    }
  }
}

// Host-only: with split_fresh a chunk also starts at the tile of the block's first new key, the
// row entry counts follow, and a block whose new keys cannot fit the fused append's tiles is
// refused.
TEST(AttentionPlan, SplitFreshStartsAChunkAtTheNewKeysTile) {
  const std::vector<int32_t> pages_a = {3, 1, 4, 0};
  cuda::PlanInput pin;
  pin.blocks.push_back({200, &pages_a, 198, 5});  // keys 198, 199 are batch tokens 5, 6
  pin.views = {{{0, 0}}};
  pin.row_worker = {0, 0};
  pin.row_pos = {198, 199};
  pin.group = 4;
  pin.kv_heads = 2;
  pin.chunk = 128;
  pin.split_fresh = true;
  const cuda::HostPlan hp = cuda::build_plan(pin, 0, 2);
  std::vector<std::pair<int32_t, int32_t>> chunks;
  for (const cuda::AttnItem& it : hp.items) {
    chunks.emplace_back(it.key_start, it.key_end);
    EXPECT_EQ(it.fresh_from, 198);
    EXPECT_EQ(it.fresh_row, 5);
  }
  std::sort(chunks.begin(), chunks.end());
  const std::vector<std::pair<int32_t, int32_t>> want = {{0, 128}, {128, 192}, {192, 200}};
  EXPECT_EQ(chunks, want);
  const std::vector<int64_t> counts = cuda::row_entry_counts(pin);
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(counts[r], hp.row_entry_ptr[r + 1] - hp.row_entry_ptr[r]) << r;
  pin.split_fresh = false;
  EXPECT_EQ(cuda::build_plan(pin, 0, 2).items.size(), 2u);
  EXPECT_EQ(cuda::row_entry_counts(pin)[0], 2);

  pin.split_fresh = true;
  pin.chunk = 256;
  pin.blocks[0].fresh_from = 10;  // 190 new keys in one 256-key chunk: tiles 0-3 of its item
  pin.blocks[0].fresh_row = 0;
  pin.row_pos = {150, 199};
  EXPECT_THROW(cuda::build_plan(pin, 0, 2), Error);
}

// The gaps' test batch: block 0 (200 keys; forgotten [10, 20), [60, 70), [128, 192)) occurs
// twice in worker 0's view, at 0 and at 210, around block 1 (10 keys); worker 0's rows are in
// block 2 (at 410). Worker 1 sees block 0 alone, its row at position 100 (limit 100).
struct GapBatch {
  std::vector<int32_t> pages0 = {3, 1, 4, 0}, pages1 = {2}, pages2 = {5};
  Ranges gaps0 = {{10, 20}, {60, 70}, {128, 192}};
  cuda::PlanInput pin;
  GapBatch() {
    pin.blocks.push_back({200, &pages0});
    pin.blocks.back().gaps = &gaps0;
    pin.blocks.push_back({10, &pages1});
    pin.blocks.push_back({8, &pages2, 6});
    pin.views = {{{0, 0}, {1, 200}, {0, 210}, {2, 410}}, {{0, 0}}};
    pin.row_worker = {0, 0, 1};
    pin.row_pos = {416, 417, 100};
    pin.group = 2;
    pin.kv_heads = 2;
    pin.chunk = 128;
  }
};

bool forgotten(const Ranges& gaps, int64_t j) {
  for (const auto& [b, e] : gaps)
    if (j >= b && j < e) return true;
  return false;
}

// Every item of a block with gaps starts at a gap's end or a chunk start, its first tile is the
// one holding key_from, and over a row's items of each occurrence the keys it attends to are
// exactly the kept keys up to its limit, each once; the row entry counts follow.
TEST(AttentionPlan, GapsAreCutOutOfTheItemsOfEveryOccurrence) {
  GapBatch g;
  EXPECT_EQ(cuda::block_pieces(g.pin, 0), (Ranges{{0, 10}, {20, 60}, {70, 128}, {192, 200}}));
  EXPECT_EQ(cuda::block_pieces(g.pin, 1), (Ranges{{0, 10}}));
  g.pin.chunk = 64;
  EXPECT_EQ(cuda::block_pieces(g.pin, 0), (Ranges{{0, 10}, {20, 60}, {70, 128}, {192, 200}}));
  g.pin.chunk = 256;
  EXPECT_EQ(cuda::block_pieces(g.pin, 0), (Ranges{{0, 10}, {20, 60}, {70, 128}, {192, 200}}));
  g.gaps0 = {{0, 5}, {64, 70}, {199, 200}};  // at a block's start, a tile's start, its end
  EXPECT_EQ(cuda::block_pieces(g.pin, 0), (Ranges{{5, 64}, {70, 199}}));
  g.pin.chunk = 64;
  EXPECT_EQ(cuda::block_pieces(g.pin, 0), (Ranges{{5, 64}, {70, 128}, {128, 192}, {192, 199}}));

  for (const Ranges& gaps : {Ranges{{10, 20}, {60, 70}, {128, 192}}, Ranges{{0, 5}, {64, 70}}}) {
    for (int32_t chunk : {64, 128, 256}) {
      g.gaps0 = gaps;
      g.pin.chunk = chunk;
      const cuda::HostPlan hp = cuda::build_plan(g.pin, 0, 3);
      // seen[(row, limit)][key] over block 0's items (page_base 0: block 0's pages come first).
      std::vector<std::vector<int>> seen(3 * 2, std::vector<int>(200, 0));
      for (const cuda::AttnItem& it : hp.items) {
        EXPECT_EQ(it.key_start, it.key_from / kPageTokens * kPageTokens);
        EXPECT_LT(it.key_from, it.key_end);
        if (it.page_base != 0) continue;
        EXPECT_FALSE(forgotten(gaps, it.key_from)) << it.key_from;
        for (int32_t k = it.pair_start; k < it.pair_start + it.pair_count; ++k) {
          const cuda::AttnPair pr = hp.pairs[k];
          const int occ = pr.limit >= 210 ? 0 : pr.row < 2 ? 1 : 0;  // worker 0's at 0 or at 210
          for (int32_t j = it.key_from; j < it.key_end && j <= pr.limit; ++j)
            ++seen[pr.row * 2 + occ][j];
        }
      }
      for (int64_t r = 0; r < 3; ++r)
        for (int occ = 0; occ < (r < 2 ? 2 : 1); ++occ) {
          const int64_t limit = g.pin.row_pos[r] - (occ == 0 ? 0 : 210);
          for (int64_t j = 0; j < 200; ++j)
            EXPECT_EQ(seen[r * 2 + occ][j], j <= limit && !forgotten(gaps, j) ? 1 : 0)
                << "row " << r << " occurrence " << occ << " key " << j << " chunk " << chunk;
        }
      const std::vector<int64_t> counts = cuda::row_entry_counts(g.pin);
      for (int64_t r = 0; r < 3; ++r)
        EXPECT_EQ(counts[r], hp.row_entry_ptr[r + 1] - hp.row_entry_ptr[r]) << r;
    }
  }
}

// The score tiles by hand: block 0's kept keys cut at pages and gaps, each tile with the pairs
// that see its first key (largest limit first), a block no view holds gets no tile but its
// place, and a block named twice is scored twice.
TEST(AttentionPlan, ScoreTilesCoverTheKeptKeysOfEveryPage) {
  GapBatch g;
  const cuda::HostScorePlan sp = cuda::build_score_plan(g.pin, {{0, 200}, {-1, 7}, {1, 10}});
  EXPECT_EQ(sp.out, (std::vector<int64_t>{0, 200, 207}));
  EXPECT_EQ(sp.n_scores, 217);
  // Pairs of block 0: rows 1, 0 at offset 0 (limits 417, 416), rows 1, 0 at 210 (207, 206), row 2
  // (100); of block 1: rows 1, 0 (217, 216).
  const std::vector<std::pair<int32_t, int32_t>> want_pairs = {
      {1, 417}, {0, 416}, {1, 207}, {0, 206}, {2, 100}, {1, 217}, {0, 216}};
  ASSERT_EQ(sp.pairs.size(), want_pairs.size());
  for (size_t i = 0; i < sp.pairs.size(); ++i)
    EXPECT_EQ(std::make_pair(sp.pairs[i].row, sp.pairs[i].limit), want_pairs[i]) << i;
  // (page, key_start, key_from, key_end, out, pair_start, pair_count)
  using T = std::tuple<int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t>;
  const std::vector<T> want = {{3, 0, 0, 10, 0, 0, 5},
                               {3, 0, 20, 60, 0, 0, 5},
                               {1, 64, 70, 128, 0, 0, 5},
                               {0, 192, 192, 200, 0, 0, 4},
                               {2, 0, 0, 10, 207, 5, 2}};
  ASSERT_EQ(sp.tiles.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const cuda::ScoreTile& t = sp.tiles[i];
    EXPECT_EQ(T(t.page, t.key_start, t.key_from, t.key_end, t.out, t.pair_start, t.pair_count),
              want[i])
        << "tile " << i;
  }
  // Worker 1 alone (limit 100): the last tile it sees ends at its limit.
  g.pin.row_worker = {1};
  g.pin.row_pos = {100};
  const cuda::HostScorePlan one = cuda::build_score_plan(g.pin, {{0, 200}, {0, 200}});
  ASSERT_EQ(one.tiles.size(), 6u);
  EXPECT_EQ(one.tiles[2].key_end, 101);
  EXPECT_EQ(one.tiles[5].out, 200);
}

}  // namespace
}  // namespace hogwild::test
