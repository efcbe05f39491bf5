// The host-side bookkeeping of cache blocks, one implementation for every backend
// (docs/ARCHITECTURE.md §2, §7): which block ids are live, each block's length in tokens, the
// pages (kPageTokens tokens each) that hold its K/V, the free-page list and the reference
// counts. A backend keeps only the K/V data, addressed by block id or page; every rule about
// blocks (ids, lengths, capacity, what append and truncate accept) lives here, so that the CPU
// and CUDA backends accept and refuse the same operations with the same messages.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "model/backend.h"

namespace hogwild {

class BlockTable {
 public:
  /// num_pages: pages the KV pool holds (0 = no limit: pages are numbered as they are needed);
  /// page_tokens: tokens per page (>= 1).
  BlockTable(int64_t num_pages, int64_t page_tokens);

  /// A new empty block with one reference: the lowest id not live. Never throws (an empty block
  /// holds no page).
  BlockId new_block();
  /// Another holder of block b (e.g. a shared prompt): free_block must then be called once more
  /// before its pages return. Throws hogwild::Error for an unknown block.
  void retain(BlockId b);
  /// Drops one reference; the last one frees the block and returns its pages. Throws
  /// hogwild::Error for an unknown block.
  void free_block(BlockId b);
  /// Throws hogwild::Error ("<what>: cache block <b> does not exist ...") unless b is live.
  void check(BlockId b, const char* what) const;
  bool is_live(BlockId b) const;
  /// Tokens in block b. Throws hogwild::Error for an unknown block.
  int64_t len(BlockId b) const;
  /// Pages of block b in order (ceil(len / page_tokens) of them). Throws for an unknown block.
  const std::vector<int32_t>& pages(BlockId b) const;
  /// Pages block b needs beyond those it holds to reach new_len tokens (0 when it has room).
  int64_t pages_to_grow(BlockId b, int64_t new_len) const;
  /// Sets b's length to new_len (>= its length), taking free pages. Throws hogwild::Error ("KV
  /// cache full", with the sizes) when the pool has too few free pages; nothing changes then.
  void grow(BlockId b, int64_t new_len);
  /// Drops b's tokens beyond new_len (0 <= new_len <= len) and returns the pages it no longer
  /// needs. Throws hogwild::Error for a bad length.
  void truncate(BlockId b, int64_t new_len);
  /// The checks of Backend::append_block(dst, src): both live, dst != src. Throws.
  void check_append(BlockId dst, BlockId src) const;
  /// Marks tokens [begin, end) of block b as forgotten (Backend::forget_tokens,
  /// docs/ARCHITECTURE.md "Bounded shared memory"): they keep their indices, so every later
  /// token's position is unchanged, but no query attends to them any more. Ranges already
  /// forgotten may overlap; the block's gaps stay sorted and merged. Throws hogwild::Error for an
  /// unknown block or a range outside [0, len(b)] or empty.
  void forget(BlockId b, int64_t begin, int64_t end);
  /// Block b's forgotten ranges [begin, end) of block-local indices, sorted, disjoint, not
  /// touching; empty when nothing is forgotten. Throws for an unknown block.
  const std::vector<std::pair<int64_t, int64_t>>& gaps(BlockId b) const;
  /// Tokens of block b that still take part in attention: len(b) minus its gaps.
  int64_t kept(BlockId b) const;
  /// Backend::append_block's bookkeeping of gaps: src's gaps, shifted by dst_len_before, join
  /// dst's. Call after grow(dst, ...).
  void append_gaps(BlockId dst, BlockId src, int64_t dst_len_before);

  int64_t page_tokens() const { return page_tokens_; }
  int64_t num_pages() const { return num_pages_; }  // 0 = no limit
  int64_t free_pages() const;                       // INT64_MAX when there is no limit
  int64_t used_pages() const { return used_pages_; }
  int64_t live_blocks() const { return live_; }
  /// Highest block id ever handed out + 1 (ids below it may be dead).
  int64_t id_bound() const { return static_cast<int64_t>(blocks_.size()); }

 private:
  struct Block {
    int32_t refs = 0;  // 0 = not live
    int64_t len = 0;
    std::vector<int32_t> pages;
    std::vector<std::pair<int64_t, int64_t>> gaps;  // forgotten [begin, end), sorted, merged
  };
  const Block& ref(BlockId b, const char* what) const;
  Block& ref(BlockId b, const char* what);
  int32_t take_page();

  int64_t num_pages_, page_tokens_;
  std::vector<Block> blocks_;
  std::vector<int32_t> free_;  // free page ids (LIFO)
  int32_t next_page_ = 0;      // pages never handed out start here
  int64_t used_pages_ = 0, live_ = 0;
};

}  // namespace hogwild
