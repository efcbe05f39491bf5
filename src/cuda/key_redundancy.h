// R-KV's redundancy term of the KV budget on the GPU (Backend::key_redundancy, kv/backend.h; Cai
// et al. 2025, arXiv 2505.24133, §3 "redundancy estimation"): per layer and KV head, each chunk's
// key (the mean of its kept keys, each L2-normalised, normalised again) and each chunk's mean
// cosine similarity to the other chunks' keys, c_i . (S - c_i) / (n - 1) with S = sum_j c_j,
// added into one fp32 value per chunk. The CPU backend's definition (cpu/cpu_redundancy.cpp), on
// the bf16 keys of the paged pool.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kv_layout.h"

namespace hogwild::cuda {

/// Device arrays of one measure (one block, n chunks), as the launches read and write them.
struct RedundancyArgs {
  const int32_t* pages = nullptr;   // the block's page ids by page index (-1 = given back)
  const int32_t* chunks = nullptr;  // (n, 2): block-local [begin, end) of each chunk
  const uint8_t* kept = nullptr;    // (block len): 1 for a token not forgotten
  int32_t n = 0;                    // chunks (>= 2)
  float* keys = nullptr;            // scratch (num_key_value_heads, n, head_dim) fp32
  float* sum = nullptr;             // scratch (num_key_value_heads, head_dim) fp32
  // (n) fp32, zeroed by the caller before the first layer; every layer's launch adds
  // scale * c_i . (S - c_i) per KV head (scale = 1 / ((n - 1) * layers * KV heads)).
  float* out = nullptr;
  float scale = 0;
};

/// One layer's share of the measure: keys from the layer's KV region `layer_pool` (K tiles of
/// layout), three kernels on `stream` (chunk keys, their sum per KV head, the dots).
/// PRECONDITION: head_dim <= 256.
void layer_key_redundancy(const __nv_bfloat16* layer_pool, const KvLayout& layout,
                          const RedundancyArgs& a, cudaStream_t stream);

}  // namespace hogwild::cuda
