// Private to CudaBackend (cuda_backend.cpp, cuda_forward.cpp).
#pragma once

#include "cuda/attention.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"

namespace hogwild::cuda {

// Per-forward index arrays: a pinned host mirror and a device buffer at fixed addresses (so a
// captured graph reads this step's values). Header: ids, pos, slot, logit_rows (tcap each); then
// plan slots of fixed size: items, n_units, pages, pairs, row_entry_ptr, row_entries, units.
// Items <= entries (an item has >= 1 pair), units <= items x KV heads.
struct CudaBackend::Staging {
  int64_t tcap = 0, ecap = 0, pcap = 0, ucap = 0;
  int n_slots = 0;
  int32_t* host = nullptr;
  int32_t* dev = nullptr;
  int64_t slot_ints() const {
    return ((kAttnItemInts * ecap + 4 + pcap + 2 * ecap + tcap + 1 + ecap + kAttnUnitInts * ucap) +
            3) /
           4 * 4;
  }
  int64_t total_ints() const { return 4 * tcap + n_slots * slot_ints(); }
  int64_t slot_base(int k) const { return 4 * tcap + k * slot_ints(); }
  void alloc(int slots) {
    release();
    n_slots = slots;
    HOGWILD_CUDA_CHECK(cudaMallocHost(&host, total_ints() * 4));
    HOGWILD_CUDA_CHECK(cudaMalloc(&dev, total_ints() * 4));
  }
  void release() {
    if (host) cudaFreeHost(host);
    if (dev) cudaFree(dev);
    host = dev = nullptr;
  }
  ~Staging() { release(); }
};

}  // namespace hogwild::cuda
