// Layout of the paged KV pool on the GPU. A cache block (docs/ARCHITECTURE.md §2) is a list of
// pages of kPageTokens tokens; a token's *slot* = page * kPageTokens + index in page. One
// allocation holds every layer:  pool[layer][page][kind: 0 = K, 1 =
// V][num_key_value_heads][kPageTokens][head_dim] (bf16), so the K (or V) tile of one page and one
// KV head is a contiguous kPageTokens x head_dim matrix: the unit the attention kernel loads.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define HOGWILD_HD __host__ __device__ __forceinline__
#else
#define HOGWILD_HD inline
#endif

namespace hogwild::cuda {

inline constexpr int kPageTokens = 64;  // tokens per page = keys per attention tile

struct KvLayout {
  int64_t num_pages = 0;  // pages in the pool
  int32_t num_key_value_heads = 0;
  int32_t head_dim = 0;

  /// Elements of one (page, kind, head) tile.
  HOGWILD_HD int64_t tile_elems() const { return int64_t(kPageTokens) * head_dim; }
  /// Elements of one layer (all pages, K and V).
  HOGWILD_HD int64_t layer_elems() const {
    return num_pages * 2 * num_key_value_heads * tile_elems();
  }
  /// Element offset of (page, kind, head, token 0, dim 0) inside one layer's region.
  HOGWILD_HD int64_t tile_offset(int64_t page, int kind, int64_t head) const {
    return ((page * 2 + kind) * num_key_value_heads + head) * tile_elems();
  }
  /// Element offset of (slot, kind, head, dim 0) inside one layer's region.
  HOGWILD_HD int64_t slot_offset(int64_t slot, int kind, int64_t head) const {
    return tile_offset(slot / kPageTokens, kind, head) + (slot % kPageTokens) * int64_t(head_dim);
  }
};

}  // namespace hogwild::cuda
