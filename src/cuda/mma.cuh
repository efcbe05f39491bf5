// Device helpers shared by the tensor-core kernels (skinny_gemm.cu, quant_gemm.cu, moe.cu,
// attention.cu): the streaming 16-byte weight load, cp.async into shared memory and mma.sync
// m16n8k16 bf16 x bf16 -> fp32.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace hogwild::cuda {

/// 16 bytes at p (16-byte aligned) read once: not kept in L1, a 256-byte L2 prefetch hint. Not
/// volatile: the compiler may move (and speculate) it, so callers read only inside their matrix.
__device__ __forceinline__ uint4 ld_stream(const void* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

/// ld_stream, volatile: each load stays behind its bounds check (the MoE expert kernels, whose
/// loads the compiler otherwise hoisted above the check: cuda_moe_test read out of bounds).
__device__ __forceinline__ uint4 ld_stream_ordered(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

/// Asynchronous 16-byte copy global -> shared (both 16-byte aligned), cached in L2 only; !valid
/// reads nothing and zero-fills the 16 bytes.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  const int n = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(n));
}
/// Asynchronous 4-byte copy global -> shared (both 4-byte aligned).
__device__ __forceinline__ void cp_async4(void* dst, const void* src) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(src));
}
/// Closes the group of this thread's cp.async copies issued since the last commit.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n"); }
/// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

/// c += A B for one m16n8k16 tile: A (16 x 16 bf16) in a0..a3, B (16 x 8 bf16) in b0, b1, c fp32
/// in the mma.sync fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16").
__device__ __forceinline__ void mma_bf16(float c[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

}  // namespace hogwild::cuda
