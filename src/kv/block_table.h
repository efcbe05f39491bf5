// The host-side bookkeeping of cache blocks, one implementation for every backend
// (docs/ARCHITECTURE.md §2, §7): which block ids are live, each block's length in tokens, the
// pages (kPageTokens tokens each) that hold its K/V, the free-page list and the reference
// counts. A backend keeps only the K/V data, addressed by block id or page; every rule about
// blocks (ids, lengths, capacity, what append and truncate accept) lives here, so that the CPU
// and CUDA backends accept and refuse the same operations with the same messages.
//
// Prefix cache (automatic prefix caching, docs/ARCHITECTURE.md §2 "Prefix sharing"): a page is
// counted per holder (its reference count = the live blocks whose page list holds it), so that
// several blocks can start with the same pages. A block's page is *cached* once publish() gave
// it the chained hash of its tokens (hash of the page's kPageTokens tokens chained with the
// previous page's hash, as vLLM's automatic prefix caching); share() starts an empty block with
// the cached pages that begin a token sequence. Only full pages are cached, and a cached page is
// never written again (appends go to new pages; truncate refuses to cut into a page another
// block holds). A cached page whose last holder leaves is *idle*: it counts as free and keeps its
// hash until the pool needs a page and none is free otherwise (least recently used first).
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kv/backend.h"

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
  /// Drops one reference; the last one frees the block and drops its hold on each of its pages
  /// (a page no other block holds returns to the free count; a cached one stays cached, idle).
  /// Throws hogwild::Error for an unknown block.
  void free_block(BlockId b);
  /// Throws hogwild::Error ("<what>: cache block <b> does not exist ...") unless b is live.
  void check(BlockId b, const char* what) const;
  bool is_live(BlockId b) const;
  /// Tokens in block b. Throws hogwild::Error for an unknown block.
  int64_t len(BlockId b) const;
  /// Pages of block b in order (ceil(len / page_tokens) of them); a page every token of which is
  /// forgotten (forget) has been given back and reads kNoPage. Throws for an unknown block.
  const std::vector<int32_t>& pages(BlockId b) const;
  /// The entry of pages() for a page given back because all its tokens are forgotten.
  static constexpr int32_t kNoPage = -1;
  /// Pages block b holds: its pages() entries other than kNoPage. Throws for an unknown block.
  int64_t held_pages(BlockId b) const;
  /// Pages block b needs beyond those it holds to reach new_len tokens (0 when it has room).
  int64_t pages_to_grow(BlockId b, int64_t new_len) const;
  /// Sets b's length to new_len (>= its length), taking free pages. Throws hogwild::Error ("KV
  /// cache full", with the sizes) when the pool has too few free pages; nothing changes then.
  void grow(BlockId b, int64_t new_len);
  /// Drops b's tokens beyond new_len (0 <= new_len <= len) and returns the pages it no longer
  /// needs. The page that would hold the next token, when new_len is inside it, is written
  /// again: a cached page that only b holds leaves the cache first; one that another block holds
  /// too is refused (hogwild::Error, nothing changes; truncate at a page boundary instead); one
  /// given back (kNoPage) is taken again from the pool ("KV cache full" when none is free).
  /// Throws hogwild::Error for a bad length.
  void truncate(BlockId b, int64_t new_len);
  /// The checks of Backend::append_block(dst, src): both live, dst != src. Throws.
  void check_append(BlockId dst, BlockId src) const;
  /// Marks tokens [begin, end) of block b as forgotten (Backend::forget_tokens,
  /// docs/ARCHITECTURE.md "Bounded shared memory"): they keep their indices, so every later
  /// token's position is unchanged, but no query attends to them any more. Ranges already
  /// forgotten may overlap; the block's gaps stay sorted and merged. Every full page of b
  /// (page_tokens tokens, all below len(b)) that now lies wholly inside a gap is given back: b
  /// lets go of it (a page other blocks hold stays theirs) and its entry in pages(b) becomes
  /// kNoPage. Throws hogwild::Error for an unknown block or a range outside [0, len(b)] or empty.
  void forget(BlockId b, int64_t begin, int64_t end);
  /// Block b's forgotten ranges [begin, end) of block-local indices, sorted, disjoint, not
  /// touching; empty when nothing is forgotten. Throws for an unknown block.
  const std::vector<std::pair<int64_t, int64_t>>& gaps(BlockId b) const;
  /// Tokens of block b that still take part in attention: len(b) minus its gaps.
  int64_t kept(BlockId b) const;
  /// (len(b)) 1 for each token of block b not forgotten, 0 inside its gaps: what
  /// Backend::key_redundancy reads of the block, after checking each of `ranges` ([begin, end)
  /// token ranges) lies within it. Throws hogwild::Error ("<what>: ...") for an unknown block or
  /// a range outside [0, len(b)].
  std::vector<uint8_t> kept_mask(BlockId b, const std::vector<std::pair<int64_t, int64_t>>& ranges,
                                 const char* what) const;
  /// Backend::append_block's bookkeeping of gaps: src's gaps, shifted by dst_len_before, join
  /// dst's. Call after grow(dst, ...).
  void append_gaps(BlockId dst, BlockId src, int64_t dst_len_before);

  // ---- prefix cache (see the top of this file)

  /// The cached pages that begin tokens[0, n): the longest run of full pages whose chained hashes
  /// are cached and whose own tokens are equal (a false hit would need two different prefixes
  /// with equal 64-bit chained hashes). Changes nothing.
  PrefixHit find_prefix(const int32_t* tokens, int64_t n) const;
  /// Starts the empty block b with the pages find_prefix(tokens, n) finds: b holds them (one more
  /// reference each; idle ones leave the idle list) and its length becomes their tokens.
  /// Returns that length (0: nothing cached). Throws hogwild::Error for an unknown or non-empty
  /// block.
  int64_t share(BlockId b, const int32_t* tokens, int64_t n);
  /// Caches the full pages of block b's first n tokens, which are tokens[0, n) and whose K/V the
  /// caller has computed (after the forward that wrote them) as a prefix that reads nothing
  /// before it: the prompt of a history block. A page already cached stays as it is; a page whose
  /// hash another page holds already stays uncached. Returns the pages newly cached as (index in
  /// b's page list, page id), for a backend that keeps a copy of cached pages. Throws
  /// hogwild::Error for an unknown block or n > len(b).
  std::vector<std::pair<int64_t, int32_t>> publish(BlockId b, const int32_t* tokens, int64_t n);
  /// Pages whose cache entry was dropped (evicted for reuse, or left by truncate) since the last
  /// call; the caller may free its copies. Clears the list.
  std::vector<int32_t> take_evicted();
  /// Pages live blocks hold that no block holding them filled: the block that took them from
  /// the pool has been freed, or they were shared from the idle list. No session's KV
  /// reservation covers them: the engine's admission counts them (engine/engine.h).
  int64_t unowned_pages() const { return unowned_; }
  /// Cached pages no live block holds (they count in free_pages()).
  int64_t idle_pages() const { return static_cast<int64_t>(idle_.size()); }
  /// Pages with a cache entry (held or idle).
  int64_t cached_pages() const { return static_cast<int64_t>(cached_.size()); }
  /// Holders of page p (0 = free or idle). For tests.
  int32_t page_refs(int32_t p) const;
  /// The chained hash of one page of tokens after the page whose hash is `parent` (0 for the
  /// first page): 64-bit, the same in every run.
  static uint64_t page_hash(uint64_t parent, const int32_t* tokens, int64_t n);
  /// Without a pool limit (num_pages 0) nothing needs idle pages back, so at most this many stay
  /// idle (the least recently used go first): 32 pages of 64 tokens hold a rules prompt.
  static constexpr int64_t kMaxIdlePagesUnbounded = 32;

  int64_t page_tokens() const { return page_tokens_; }
  int64_t num_pages() const { return num_pages_; }    // 0 = no limit
  int64_t free_pages() const;                         // INT64_MAX when there is no limit;
                                                      // idle cached pages count as free
  int64_t used_pages() const { return used_pages_; }  // pages some live block holds
  /// The most pages live blocks held at once since the table was made or reset_peak (tests).
  int64_t peak_used_pages() const { return peak_used_; }
  void reset_peak() { peak_used_ = used_pages_; }
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
  // One page of the pool (by page id).
  struct Page {
    int32_t refs = 0;    // live blocks whose page list holds it
    BlockId owner = -1;  // the block that took it from the pool while that one holds it, else -1
    bool cached = false;
    uint64_t hash = 0, parent = 0;      // its chained hash and the previous page's (cached)
    std::vector<int32_t> tokens;        // its page_tokens tokens (cached), to confirm a hit
    std::list<int32_t>::iterator idle;  // its place in idle_ (cached, refs 0)
  };
  const Block& ref(BlockId b, const char* what) const;
  Block& ref(BlockId b, const char* what);
  int32_t take_page(BlockId owner);
  // Block b lets go of page p.
  void drop_page(int32_t p, BlockId b);
  // Removes page p's cache entry (it must be cached and idle or held by one block).
  void uncache(int32_t p);
  // Pages that find_prefix matches, in order.
  std::vector<int32_t> match(const int32_t* tokens, int64_t n) const;

  int64_t num_pages_, page_tokens_;
  std::vector<Block> blocks_;
  std::vector<Page> pages_;                       // by page id
  std::vector<int32_t> free_;                     // free page ids without a cache entry (LIFO)
  std::list<int32_t> idle_;                       // idle cached pages, least recently used first
  std::unordered_map<uint64_t, int32_t> cached_;  // chained hash -> page
  std::vector<int32_t> evicted_;                  // cache entries dropped (take_evicted)
  int32_t next_page_ = 0;                         // pages never handed out start here
  int64_t used_pages_ = 0, live_ = 0, unowned_ = 0, peak_used_ = 0;
};

}  // namespace hogwild
