// Views of the four layouts for hand-written block states (layout.h pictures), 1..8 workers.
#include <gtest/gtest.h>

#include "core/error.h"
#include "hogwild/layout.h"

namespace hogwild {
namespace {

using V = std::vector<BlockId>;

// Block ids: history 0, others_header[w] = 10 + w, sep 20, sep_own_header[w] = 30 + w,
// current[w] = 40 + w.
LayoutState state(Layout l, int n) {
  LayoutState s;
  s.layout = l;
  s.history = 0;
  for (int w = 0; w < n; ++w) {
    s.text.others_header.push_back(10 + w);
    s.text.sep_own_header.push_back(30 + w);
    s.current.push_back(40 + w);
  }
  s.text.sep = 20;
  return s;
}

TEST(Layout, CombinedThreeWorkers) {
  LayoutState s = state(Layout::combined, 3);
  s.closing = {7, 8};
  auto v = build_views(s);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0], (V{0, 7, 8, 10, 41, 20, 42, 30, 40}));
  EXPECT_EQ(v[1], (V{0, 7, 8, 11, 40, 20, 42, 31, 41}));
  EXPECT_EQ(v[2], (V{0, 7, 8, 12, 40, 20, 41, 32, 42}));
}

TEST(Layout, CombinedTwoWorkersHasNoInnerSeparator) {
  auto v = build_views(state(Layout::combined, 2));
  EXPECT_EQ(v[0], (V{0, 10, 41, 30, 40}));
  EXPECT_EQ(v[1], (V{0, 11, 40, 31, 41}));
}

TEST(Layout, Interleaved) {
  LayoutState s = state(Layout::interleaved, 4);
  s.closing = {9};
  auto v = build_views(s);
  for (int w = 0; w < 4; ++w) EXPECT_EQ(v[w], (V{0, 9, 40 + w}));
}

TEST(Layout, ContiguousFourWorkers) {
  auto v = build_views(state(Layout::contiguous, 4));
  EXPECT_EQ(v[2], (V{0, 12, 40, 20, 41, 20, 43, 32, 42}));
  EXPECT_EQ(v[3], (V{0, 13, 40, 20, 41, 20, 42, 33, 43}));
}

// Independent: each worker sees the history and its own output only; no constant block.
TEST(Layout, IndependentSeesOnlyItsOwnOutput) {
  LayoutState s = state(Layout::independent, 5);
  s.text = {};  // the session makes no constant blocks for it
  auto v = build_views(s);
  ASSERT_EQ(v.size(), 5u);
  for (int w = 0; w < 5; ++w) EXPECT_EQ(v[w], (V{0, 40 + w}));
  EXPECT_EQ(finisher_view(s, 99, 3), (V{0, 43, 99}));
  s.text.sep = 20;
  EXPECT_EQ(finisher_view(s, 99, 1), (V{0, 41, 20, 99}));
  EXPECT_THROW(finisher_view(s, 99, 5), Error);
}

// Skeleton-of-Thought on the independent layout: closing blocks (the outline, then the
// expansions) read as history; a worker without a block sees only them.
TEST(Layout, IndependentWithClosingAndWorkersWithoutBlocks) {
  LayoutState s = state(Layout::independent, 3);
  s.text = {};
  s.closing = {7, 8};
  s.current = {40, -1, 42};
  auto v = build_views(s);
  EXPECT_EQ(v[0], (V{0, 7, 8, 40}));
  EXPECT_EQ(v[1], (V{0, 7, 8}));
  EXPECT_EQ(v[2], (V{0, 7, 8, 42}));
  s.text.sep = 20;
  EXPECT_EQ(finisher_view(s, 99), (V{0, 7, 8, 40, 20, 42, 20, 99}));
}

TEST(Layout, OneWorkerIsPlainInEveryLayout) {
  for (Layout l :
       {Layout::combined, Layout::interleaved, Layout::contiguous, Layout::independent}) {
    LayoutState s = state(l, 1);
    EXPECT_EQ(build_views(s)[0], (V{0, 40})) << layout_name(l);
  }
}

TEST(Layout, EightWorkersCombinedLengths) {
  auto v = build_views(state(Layout::combined, 8));
  for (int w = 0; w < 8; ++w) {
    // history, header, 7 others, 6 inner separators, sep+own header, own step.
    ASSERT_EQ(v[w].size(), 1u + 1 + 7 + 6 + 1 + 1);
    EXPECT_EQ(v[w].front(), 0);
    EXPECT_EQ(v[w][1], 10 + w);
    EXPECT_EQ(v[w][v[w].size() - 2], 30 + w);
    EXPECT_EQ(v[w].back(), 40 + w);
  }
}

TEST(Layout, EmptyConstantBlocksAreSkipped) {
  LayoutState s = state(Layout::combined, 3);
  s.text.sep = -1;
  s.text.others_header = {-1, -1, -1};
  EXPECT_EQ(build_views(s)[1], (V{0, 40, 42, 31, 41}));
}

TEST(Layout, FinisherView) {
  LayoutState s = state(Layout::combined, 3);
  EXPECT_EQ(finisher_view(s, 99), (V{0, 40, 20, 41, 20, 42, 20, 99}));
}

TEST(Layout, Errors) {
  LayoutState s = state(Layout::contiguous, 2);
  s.closing = {5};
  EXPECT_THROW(build_views(s), Error);
  s = state(Layout::combined, 3);
  s.text.sep_own_header.pop_back();
  EXPECT_THROW(build_views(s), Error);
  s = state(Layout::combined, 0);
  EXPECT_THROW(build_views(s), Error);
  EXPECT_EQ(parse_layout("interleaved"), Layout::interleaved);
  EXPECT_EQ(parse_layout("independent"), Layout::independent);
  EXPECT_STREQ(layout_name(Layout::independent), "independent");
  EXPECT_THROW(parse_layout("zigzag"), Error);
}

}  // namespace
}  // namespace hogwild
