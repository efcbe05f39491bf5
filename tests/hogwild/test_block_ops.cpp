// The block table and the forward plan (kv/block_table.h, kv/forward_plan.h) on the CPU
// backend: ids, lengths, pages and every refusal of the fixed sequence of block_ops_script.h,
// against hand-computed values; the table's own accounting (pages, references, capacity).
#include <gtest/gtest.h>

#include "cpu/cpu_backend.h"
#include "kv/block_table.h"
#include "tests/hogwild/block_ops_script.h"
#include "tests/hogwild/test_support.h"

namespace hogwild::testing {
namespace {

TEST(BlockOps, CpuBackendAnswersTheScript) {
  cpu::CpuBackend be(session_model(session_specs()[2]));
  const BlockOpsRecord r = run_block_ops(be);
  EXPECT_EQ(r.ids, (std::vector<BlockId>{0, 1, 2, 1}));
  // after the step forward: h 9, a 3, b 2; h after promotion 12; b 3 after a decode token,
  // truncated to 1; at the end h 12, b 1, c 0.
  EXPECT_EQ(r.lens, (std::vector<int64_t>{9, 3, 2, 12, 3, 1, 12, 1, 0}));
  ASSERT_EQ(r.errors.size(), 8u);
  EXPECT_EQ(r.errors[0], "append_block: a block cannot be appended to itself (block 0)");
  EXPECT_EQ(r.errors[1],
            "append_block (src): cache block 77 does not exist (create it with new_block)");
  EXPECT_EQ(r.errors[2], "block_len: cache block -1 does not exist (create it with new_block)");
  EXPECT_EQ(r.errors[3], "truncate_block: new length 5 is outside [0, 1]");
  EXPECT_EQ(r.errors[4], "forward: row 0 writes block 2 which is not in worker 0's view");
  EXPECT_EQ(r.errors[5], "forward: row 0 names worker 1 but the batch has 1 views");
  EXPECT_EQ(r.errors[6],
            "forward (view): cache block 99 does not exist (create it with new_block)");
  EXPECT_EQ(r.errors[7], "forward: token id -3 (row 0) is outside the vocabulary [0, 300)");
  EXPECT_EQ(r.logits[0].size(), 300u);
  EXPECT_EQ(r.logits[1].size(), 600u);
  EXPECT_EQ(r.promoted_k.size() / 12, r.promoted_v.size() / 12);
  EXPECT_EQ(r.live_end, 0);
  EXPECT_EQ(be.kv_used_tokens(), 0);
}

TEST(BlockTable, PagesReferencesAndCapacity) {
  BlockTable t(3, 4);  // 3 pages of 4 tokens
  const BlockId a = t.new_block(), b = t.new_block();
  t.grow(a, 5);  // pages 0, 1
  EXPECT_EQ(t.pages(a), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(t.free_pages(), 1);
  EXPECT_EQ(t.pages_to_grow(b, 8), 2);
  try {
    t.grow(b, 8);
    FAIL() << "grew past the pool";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "KV cache full: a block needs 8 more tokens but only 4 are free (12 total); use "
              "fewer workers or a shorter context");
  }
  EXPECT_EQ(t.len(b), 0);  // nothing changed
  t.grow(b, 4);            // page 2
  EXPECT_EQ(t.pages(b), (std::vector<int32_t>{2}));
  t.truncate(a, 4);  // page 1 returns
  EXPECT_EQ(t.free_pages(), 1);
  t.retain(a);
  t.free_block(a);  // one holder left
  EXPECT_TRUE(t.is_live(a));
  t.free_block(a);  // page 0 returns
  EXPECT_FALSE(t.is_live(a));
  EXPECT_EQ(t.free_pages(), 2);
  EXPECT_EQ(t.new_block(), a);  // the lowest free id
  EXPECT_EQ(t.live_blocks(), 2);
  BlockTable unlimited(0, 64);
  const BlockId u = unlimited.new_block();
  unlimited.grow(u, 1000);
  EXPECT_EQ(unlimited.used_pages(), 16);
  EXPECT_THROW(unlimited.check_append(u, u), Error);
}

}  // namespace
}  // namespace hogwild::testing
