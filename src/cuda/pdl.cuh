// Programmatic dependent launch (pdl.h), device side and the launch function (include from .cu
// only).
//
// Contract for every kernel launched with launch_pdl: it calls pdl_wait() on every path before it
// reads memory an earlier kernel wrote or writes memory an earlier kernel reads (in practice: first
// thing, or after loading only constant data such as weights). Because every kernel in the chain
// waits for its predecessor's completion before it completes, completion stays transitive: when
// pdl_wait() returns, all earlier kernels of the stream are complete and their writes visible.
// pdl_launch_dependents() lets the next kernel's CTAs start before this one ends.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "cuda/cuda_check.h"
#include "cuda/pdl.h"

namespace hogwild::cuda {

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

/// kernel<<<grid, block, smem, stream>>>(args...) in thread-block clusters of `cluster` CTAs
/// (cluster {1, 1, 1}: none; else compute capability >= 9.0, grid divisible by it, <= 8 CTAs),
/// with programmatic stream serialization when enabled (and never on the legacy default stream).
/// Checks the launch.
template <typename... Params, typename... Args>
void launch_pdl_clusters(void (*kernel)(Params...), dim3 grid, dim3 block, dim3 cluster,
                         size_t smem, cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  unsigned n = 0;
  if (programmatic_launch() && stream != nullptr) {
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (cluster.x * cluster.y * cluster.z > 1) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = cluster.x;
    attr[n].val.clusterDim.y = cluster.y;
    attr[n++].val.clusterDim.z = cluster.z;
  }
  cfg.attrs = attr;
  cfg.numAttrs = n;
  HOGWILD_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

/// kernel<<<grid, block, smem, stream>>>(args...), with programmatic stream serialization when
/// enabled (and never on the legacy default stream). Checks the launch.
template <typename... Params, typename... Args>
void launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                Args&&... args) {
  launch_pdl_clusters(kernel, grid, block, dim3(1, 1, 1), smem, stream,
                      std::forward<Args>(args)...);
}

}  // namespace hogwild::cuda
