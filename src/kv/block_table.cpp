#include "kv/block_table.h"

#include <algorithm>
#include <climits>

#include "core/error.h"

namespace hogwild {

BlockTable::BlockTable(int64_t num_pages, int64_t page_tokens)
    : num_pages_(num_pages), page_tokens_(page_tokens) {
  HOGWILD_CHECK(num_pages >= 0 && page_tokens >= 1 && num_pages < INT32_MAX);
}

const BlockTable::Block& BlockTable::ref(BlockId b, const char* what) const {
  if (b < 0 || b >= static_cast<BlockId>(blocks_.size()) || blocks_[b].refs == 0)
    fail("{}: cache block {} does not exist (create it with new_block)", what, b);
  return blocks_[b];
}

BlockTable::Block& BlockTable::ref(BlockId b, const char* what) {
  return const_cast<Block&>(static_cast<const BlockTable*>(this)->ref(b, what));
}

void BlockTable::check(BlockId b, const char* what) const { ref(b, what); }

bool BlockTable::is_live(BlockId b) const {
  return b >= 0 && b < static_cast<BlockId>(blocks_.size()) && blocks_[b].refs > 0;
}

BlockId BlockTable::new_block() {
  BlockId id = 0;
  while (id < static_cast<BlockId>(blocks_.size()) && blocks_[id].refs > 0) ++id;
  if (id == static_cast<BlockId>(blocks_.size())) blocks_.emplace_back();
  blocks_[id] = Block{1, 0, {}, {}};
  ++live_;
  return id;
}

void BlockTable::retain(BlockId b) { ref(b, "retain").refs += 1; }

void BlockTable::free_block(BlockId b) {
  Block& blk = ref(b, "free_block");
  if (--blk.refs > 0) return;
  for (auto it = blk.pages.rbegin(); it != blk.pages.rend(); ++it)
    if (*it != kNoPage) drop_page(*it, b);
  blk = Block{};
  --live_;
}

void BlockTable::drop_page(int32_t p, BlockId b) {
  Page& pg = pages_[p];
  HOGWILD_CHECK(pg.refs > 0);
  if (--pg.refs > 0) {
    if (pg.owner == b) pg.owner = -1, ++unowned_;  // the others hold it on no reservation
    return;
  }
  if (pg.owner != b) --unowned_;
  pg.owner = -1;
  --used_pages_;
  if (!pg.cached) {
    free_.push_back(p);
    return;
  }
  pg.idle = idle_.insert(idle_.end(), p);  // most recently used last
  if (num_pages_ == 0 && idle_pages() > kMaxIdlePagesUnbounded) {
    const int32_t old = idle_.front();
    uncache(old);
    free_.push_back(old);
  }
}

void BlockTable::uncache(int32_t p) {
  Page& pg = pages_[p];
  HOGWILD_CHECK(pg.cached);
  if (pg.refs == 0) idle_.erase(pg.idle);
  cached_.erase(pg.hash);
  pg.cached = false;
  pg.tokens.clear();
  evicted_.push_back(p);
}

int64_t BlockTable::len(BlockId b) const { return ref(b, "block_len").len; }

const std::vector<int32_t>& BlockTable::pages(BlockId b) const { return ref(b, "pages").pages; }

int64_t BlockTable::held_pages(BlockId b) const {
  const auto& p = ref(b, "pages").pages;
  return static_cast<int64_t>(p.size() - std::count(p.begin(), p.end(), kNoPage));
}

int64_t BlockTable::free_pages() const {
  if (num_pages_ == 0) return INT64_MAX;
  return num_pages_ - used_pages_;
}

int64_t BlockTable::pages_to_grow(BlockId b, int64_t new_len) const {
  const Block& blk = ref(b, "grow");
  const int64_t want = (new_len + page_tokens_ - 1) / page_tokens_;
  return std::max<int64_t>(0, want - static_cast<int64_t>(blk.pages.size()));
}

int32_t BlockTable::take_page(BlockId owner) {
  int32_t p = 0;
  if (!free_.empty()) {
    p = free_.back();
    free_.pop_back();
  } else if (num_pages_ == 0 || next_page_ < num_pages_) {
    p = next_page_++;
    pages_.emplace_back();
  } else {  // the pool is made of held and idle pages: the least recently used idle one goes
    HOGWILD_CHECK(!idle_.empty());
    p = idle_.front();
    uncache(p);
  }
  pages_[p].refs = 1;
  pages_[p].owner = owner;
  peak_used_ = std::max(peak_used_, ++used_pages_);
  return p;
}

void BlockTable::grow(BlockId b, int64_t new_len) {
  Block& blk = ref(b, "grow");
  HOGWILD_CHECK(new_len >= blk.len);
  const int64_t more = pages_to_grow(b, new_len);
  if (more > free_pages())
    fail(
        "KV cache full: a block needs {} more tokens but only {} are free ({} total); use fewer "
        "workers or a shorter context",
        new_len - blk.len, free_pages() * page_tokens_, num_pages_ * page_tokens_);
  for (int64_t i = 0; i < more; ++i) blk.pages.push_back(take_page(b));
  blk.len = new_len;
}

void BlockTable::truncate(BlockId b, int64_t new_len) {
  Block& blk = ref(b, "truncate_block");
  if (new_len < 0 || new_len > blk.len)
    fail("truncate_block: new length {} is outside [0, {}]", new_len, blk.len);
  const size_t keep = static_cast<size_t>((new_len + page_tokens_ - 1) / page_tokens_);
  if (new_len % page_tokens_ != 0 && keep <= blk.pages.size()) {
    // The page that takes the next token is written again: it must be b's alone.
    if (blk.pages[keep - 1] == kNoPage) {  // given back: the next token needs a page again
      if (free_pages() < 1)
        fail("KV cache full: truncate_block needs a page for block {} and none is free", b);
      blk.pages[keep - 1] = take_page(b);
    }
    const int32_t last = blk.pages[keep - 1];
    if (pages_[last].refs > 1)
      fail(
          "truncate_block: block {} shares its page {} (tokens [{}, {})) with other blocks "
          "through the prefix cache, and writing it again would change what they read; truncate "
          "at a multiple of {} tokens",
          b, keep - 1, (keep - 1) * page_tokens_, keep * page_tokens_, page_tokens_);
    if (pages_[last].cached) uncache(last);
  }
  while (blk.pages.size() > keep) {
    if (blk.pages.back() != kNoPage) drop_page(blk.pages.back(), b);
    blk.pages.pop_back();
  }
  blk.len = new_len;
  // Gaps beyond the new length go; one that straddles it is cut.
  auto& g = blk.gaps;
  while (!g.empty() && g.back().first >= new_len) g.pop_back();
  if (!g.empty() && g.back().second > new_len) g.back().second = new_len;
}

int32_t BlockTable::page_refs(int32_t p) const {
  HOGWILD_CHECK(p >= 0 && p < static_cast<int32_t>(pages_.size()));
  return pages_[p].refs;
}

uint64_t BlockTable::page_hash(uint64_t parent, const int32_t* tokens, int64_t n) {
  // splitmix64's finaliser over the parent hash and each token in turn.
  auto mix = [](uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  uint64_t h = mix(parent + 0x9e3779b97f4a7c15ULL);
  for (int64_t i = 0; i < n; ++i) h = mix(h ^ static_cast<uint32_t>(tokens[i]));
  return h;
}

std::vector<int32_t> BlockTable::match(const int32_t* tokens, int64_t n) const {
  std::vector<int32_t> hit;
  uint64_t parent = 0;
  for (int64_t i = 0; (i + 1) * page_tokens_ <= n; ++i) {
    const int32_t* t = tokens + i * page_tokens_;
    const uint64_t h = page_hash(parent, t, page_tokens_);
    const auto it = cached_.find(h);
    if (it == cached_.end()) break;
    const Page& pg = pages_[it->second];
    if (pg.parent != parent || !std::equal(pg.tokens.begin(), pg.tokens.end(), t)) break;
    hit.push_back(it->second);
    parent = h;
  }
  return hit;
}

PrefixHit BlockTable::find_prefix(const int32_t* tokens, int64_t n) const {
  PrefixHit r;
  for (int32_t p : match(tokens, n)) {
    r.tokens += page_tokens_;
    r.idle_pages += pages_[p].refs == 0 ? 1 : 0;
  }
  return r;
}

int64_t BlockTable::share(BlockId b, const int32_t* tokens, int64_t n) {
  Block& blk = ref(b, "share_prefix");
  if (blk.len != 0 || !blk.pages.empty())
    fail("share_prefix: block {} is not empty ({} tokens); share into a new block", b, blk.len);
  for (int32_t p : match(tokens, n)) {
    Page& pg = pages_[p];
    if (pg.refs == 0) {  // idle: back in use, on no block's reservation
      idle_.erase(pg.idle);
      peak_used_ = std::max(peak_used_, ++used_pages_);
      ++unowned_;
    }
    pg.refs += 1;
    blk.pages.push_back(p);
  }
  blk.len = static_cast<int64_t>(blk.pages.size()) * page_tokens_;
  return blk.len;
}

std::vector<std::pair<int64_t, int32_t>> BlockTable::publish(BlockId b, const int32_t* tokens,
                                                             int64_t n) {
  const Block& blk = ref(b, "cache_prefix");
  if (n < 0 || n > blk.len) fail("cache_prefix: {} tokens given, block {} holds {}", n, b, blk.len);
  std::vector<std::pair<int64_t, int32_t>> added;
  uint64_t parent = 0;
  for (int64_t i = 0; (i + 1) * page_tokens_ <= n; ++i) {
    const int32_t* t = tokens + i * page_tokens_;
    const uint64_t h = page_hash(parent, t, page_tokens_);
    const int32_t p = blk.pages[i];
    if (p == kNoPage) break;  // forgotten: nothing after it reads as a prefix
    Page& pg = pages_[p];
    HOGWILD_CHECK(!pg.cached || pg.hash == h);  // cached pages hold what they were cached for
    if (!pg.cached && !cached_.count(h)) {
      pg.cached = true;
      pg.hash = h;
      pg.parent = parent;
      pg.tokens.assign(t, t + page_tokens_);
      cached_[h] = p;
      added.emplace_back(i, p);
    }
    parent = h;
  }
  return added;
}

std::vector<int32_t> BlockTable::take_evicted() { return std::exchange(evicted_, {}); }

void BlockTable::check_append(BlockId dst, BlockId src) const {
  if (dst == src) fail("append_block: a block cannot be appended to itself (block {})", dst);
  ref(src, "append_block (src)");
  ref(dst, "append_block (dst)");
}

void BlockTable::forget(BlockId b, int64_t begin, int64_t end) {
  Block& blk = ref(b, "forget_tokens");
  if (begin < 0 || end > blk.len || begin >= end)
    fail("forget_tokens: range [{}, {}) is empty or outside block {} of {} tokens", begin, end, b,
         blk.len);
  auto& g = blk.gaps;
  g.emplace_back(begin, end);
  std::sort(g.begin(), g.end());
  std::vector<std::pair<int64_t, int64_t>> merged;
  for (const auto& r : g) {
    if (!merged.empty() && r.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  g = std::move(merged);
  // Full pages wholly inside a gap go back (their tokens are never read again).
  for (const auto& [s, e] : g)
    for (int64_t k = (s + page_tokens_ - 1) / page_tokens_;
         (k + 1) * page_tokens_ <= std::min(e, blk.len); ++k)
      if (blk.pages[k] != kNoPage) {
        drop_page(blk.pages[k], b);
        blk.pages[k] = kNoPage;
      }
}

const std::vector<std::pair<int64_t, int64_t>>& BlockTable::gaps(BlockId b) const {
  return ref(b, "gaps").gaps;
}

std::vector<uint8_t> BlockTable::kept_mask(BlockId b,
                                           const std::vector<std::pair<int64_t, int64_t>>& ranges,
                                           const char* what) const {
  const Block& blk = ref(b, what);
  const int64_t len = blk.len;
  for (const auto& [rb, re] : ranges)
    if (rb < 0 || re < rb || re > len)
      fail("{}: chunk [{}, {}) is outside block {} of {} tokens", what, rb, re, b, len);
  std::vector<uint8_t> kept(static_cast<size_t>(len), 1);
  for (const auto& [gb, ge] : blk.gaps)
    std::fill(kept.begin() + std::min(gb, len), kept.begin() + std::min(ge, len), 0);
  return kept;
}

int64_t BlockTable::kept(BlockId b) const {
  const Block& blk = ref(b, "gaps");
  int64_t n = blk.len;
  for (const auto& [s, e] : blk.gaps) n -= e - s;
  return n;
}

void BlockTable::append_gaps(BlockId dst, BlockId src, int64_t dst_len_before) {
  const auto src_gaps = ref(src, "append_block (src)").gaps;  // a copy: dst may alias nothing
  for (const auto& [s, e] : src_gaps) forget(dst, dst_len_before + s, dst_len_before + e);
}

}  // namespace hogwild
