#include "model/block_table.h"

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
  free_.insert(free_.end(), blk.pages.rbegin(), blk.pages.rend());
  used_pages_ -= static_cast<int64_t>(blk.pages.size());
  blk = Block{};
  --live_;
}

int64_t BlockTable::len(BlockId b) const { return ref(b, "block_len").len; }

const std::vector<int32_t>& BlockTable::pages(BlockId b) const { return ref(b, "pages").pages; }

int64_t BlockTable::free_pages() const {
  if (num_pages_ == 0) return INT64_MAX;
  return num_pages_ - used_pages_;
}

int64_t BlockTable::pages_to_grow(BlockId b, int64_t new_len) const {
  const Block& blk = ref(b, "grow");
  const int64_t want = (new_len + page_tokens_ - 1) / page_tokens_;
  return std::max<int64_t>(0, want - static_cast<int64_t>(blk.pages.size()));
}

int32_t BlockTable::take_page() {
  if (!free_.empty()) {
    const int32_t p = free_.back();
    free_.pop_back();
    return p;
  }
  return next_page_++;
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
  for (int64_t i = 0; i < more; ++i) blk.pages.push_back(take_page());
  used_pages_ += more;
  blk.len = new_len;
}

void BlockTable::truncate(BlockId b, int64_t new_len) {
  Block& blk = ref(b, "truncate_block");
  if (new_len < 0 || new_len > blk.len)
    fail("truncate_block: new length {} is outside [0, {}]", new_len, blk.len);
  const size_t keep = static_cast<size_t>((new_len + page_tokens_ - 1) / page_tokens_);
  while (blk.pages.size() > keep) {
    free_.push_back(blk.pages.back());
    blk.pages.pop_back();
    --used_pages_;
  }
  blk.len = new_len;
  // Gaps beyond the new length go; one that straddles it is cut.
  auto& g = blk.gaps;
  while (!g.empty() && g.back().first >= new_len) g.pop_back();
  if (!g.empty() && g.back().second > new_len) g.back().second = new_len;
}

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
}

const std::vector<std::pair<int64_t, int64_t>>& BlockTable::gaps(BlockId b) const {
  return ref(b, "gaps").gaps;
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
