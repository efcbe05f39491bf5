// Linear layers with quantized weights (docs/CUDA.md "Quantized weights"): y = x W^T where W
// (out_features, in_features) stays packed in GPU memory — 4-bit integers with a scale and zero
// point per group of input rows (AWQ, GPTQ), or float8_e4m3 with a scale per 128 x 128 block
// (FP8) — and is dequantized in registers, read once per forward for all token rows.
//
// Kernels (quant_gemm.cu): up to 32 token rows, the skinny kernel's layout (skinny_gemm.h): a CTA
// is 16 W rows (the mma.sync m16n8k16 M side) x the token rows in n-tiles of 8 (the N side), K
// split over warps. 33 to 64 rows: a CTA is 8 warps of 16 W rows x the token rows, x copied once
// per CTA into shared memory, K split over the CTAs of a cluster where the tiles cannot fill the
// GPU. A
// weight value enters the tensor cores as the exact bf16 integer q - z (int4) or the exact bf16
// value of the e4m3 number (fp8); the group's scale multiplies the fp32 product of each 32-wide k
// chunk (a chunk never straddles a group), so the only roundings are the fp32 sums. Rows above
// kQuantChunkedRows go through a bf16 copy of W made per call (dequantize_to_bf16) and cuBLAS
// (gemm.h): prefill, where the product is compute-bound. CPU twin: hogwild::dequantize
// (model/quant.h) then hogwild::cpu::matmul.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "model/quant.h"

namespace hogwild::cuda {

/// Token rows of the 16-row-CTA kernel (up to 32); above, the wide kernel (128 W rows per CTA, x
/// in shared memory) multiplies up to kQuantMaxRows rows per launch; more rows: chunks of that
/// many, up to kQuantChunkedRows; beyond that the bf16 copy and cuBLAS (measurements:
/// docs/PERFLOG.md).
inline constexpr int kQuantNarrowRows = 32;
inline constexpr int kQuantMaxRows = 64;
inline constexpr int kQuantChunkedRows = 256;

/// A quantized weight on the device, in the kernel's order. Along k, W is cut into blocks of 128
/// (in padded up to a multiple of 128 with zero weights); within a block of one row the kernel's
/// lane t reads the values of k = 32 u + 8 t + e (u, e < 4, 8) as one 16-byte (int4) or two
/// 16-byte (fp8) loads.
/// - int4: w holds (out, kb * 16) uint32 words, 8 nibbles each (nibble e = k 8 w + e, bits 4e..);
///   word (block b, slot 4 t + u) holds k = 128 b + 32 u + 8 t + 0..7.
/// - fp8: w holds (out, kb * 32) uint32 words (4 e4m3 bytes each, byte order = k order); byte
///   (block b, 32 t + 8 u + e) is k = 128 b + 32 u + 8 t + e.
/// sz (out, n_groups) uint32: int4: bits 0-15 = the fp16 scale, bits 16-31 = bf16(128 + z);
/// fp8: the fp32 bits of the block scale (scale_inv) of the row's block.
/// group_size: input rows per group (a multiple of 32; GPTQ's -1 = in, rounded up to 32).
/// perm (in) int32 or null: GPTQ act-order; column j of W is input row perm[j] (the launcher
/// gathers x by it first).
struct QuantWeight {
  WeightFormat format = WeightFormat::dense;
  int64_t out = 0, in = 0, group_size = 0, n_groups = 0;
  uint32_t* w = nullptr;
  uint32_t* sz = nullptr;
  int32_t* perm = nullptr;
  /// Bytes on the device (w + sz + perm).
  int64_t bytes() const;
};

/// The host image of a QuantWeight before upload (repack_int4 / repack_fp8).
struct QuantWeightHost {
  WeightFormat format = WeightFormat::dense;
  int64_t out = 0, in = 0, group_size = 0, n_groups = 0;
  std::vector<uint32_t> w, sz;
  std::vector<int32_t> perm;
};

/// Int4Weight (model/quant.h) -> the kernel's order. Throws hogwild::Error when group_size is not
/// a multiple of 32 (the kernel's k chunk; AWQ and GPTQ use 32, 64, 128 or one group).
QuantWeightHost repack_int4(const Int4Weight& w);
/// Fp8Weight -> the kernel's order, the block scales expanded to one per row and 128-k group.
/// Throws hogwild::Error unless block_k is a multiple of 32.
QuantWeightHost repack_fp8(const Fp8Weight& w);
/// Rows [0, a.out) of a then b.out rows of b, as one weight (the fused [q; k; v] and [gate; up]).
/// Throws hogwild::Error when the formats, in, group sizes or act-order permutations differ.
QuantWeightHost concat_rows(const std::vector<const QuantWeightHost*>& parts);

/// Allocates and uploads h on `stream` (synchronised before return). Owner frees with
/// free_quant_weight. Throws hogwild::Error when out of memory.
QuantWeight upload_quant_weight(const QuantWeightHost& h, cudaStream_t stream);
void free_quant_weight(QuantWeight& w);
/// Random weights of the given shape (bench): uniform nibbles or e4m3 values near +-1, scales
/// ~ 1 / sqrt(in) (int4 zeros 8), made on the device.
QuantWeight random_quant_weight(WeightFormat f, int64_t out, int64_t in, int64_t group_size,
                                uint64_t seed, cudaStream_t stream);

/// y (n_rows, out) bf16 = x W^T + bias (bias (out) bf16 or null), fp32 accumulation, for any
/// n_rows >= 1. x (n_rows, in) bf16, 16-byte aligned. scratch: device memory of
/// quant_scratch_bytes(W, n_rows) bytes (x gathered by perm; the bf16 copy of W above
/// kQuantChunkedRows rows); the cuBLAS path uses `gemm` (gemm.h).
class Gemm;
void quant_linear(Gemm& gemm, const __nv_bfloat16* x, const QuantWeight& W,
                  const __nv_bfloat16* bias, __nv_bfloat16* y, int64_t n_rows, void* scratch,
                  cudaStream_t stream);
int64_t quant_scratch_bytes(const QuantWeight& W, int64_t n_rows);

/// x (n_rows, in) bf16 with its columns in W's act-order (column j = x column W.perm[j]), written
/// to the start of scratch (n_rows * in * 2 bytes, within quant_scratch_bytes); returns it. W.perm
/// must be set.
const __nv_bfloat16* gather_act_order(const __nv_bfloat16* x, const QuantWeight& W, int64_t n_rows,
                                      void* scratch, cudaStream_t stream);

/// W as bf16 (out, in) row-major: bf16((q - z) s) (int4) or bf16(e4m3 s) (fp8). For the cuBLAS
/// path and tests.
void dequantize_to_bf16(const QuantWeight& W, __nv_bfloat16* dst, cudaStream_t stream);

}  // namespace hogwild::cuda
