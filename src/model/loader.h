// Checking a checkpoint against the architecture's tensor table (tensor_names.h) without reading
// tensor data: used by load_model (weights.h), `hogwild info`, and backends that read the weights
// in their stored dtype (CUDA keeps bf16).
#pragma once

#include <string>
#include <vector>

#include "model/config.h"
#include "model/quant.h"
#include "model/safetensors.h"
#include "model/tensor_names.h"

namespace hogwild {

/// One tensor of the architecture's table as the checkpoint stores it. For a linear layer in a
/// quantized format (model/quant.h) `spec` is still the dense weight ([out, in], name
/// "<module>.weight") and the entries point at the stored pieces.
struct CheckedTensor {
  TensorSpec spec;  // name, kind, expected (dense) shape
  const Checkpoint::Entry* entry;  // dense: the tensor; int4: qweight; fp8: the F8_E4M3 weight
  WeightFormat format = WeightFormat::dense;
  const Checkpoint::Entry* qzeros = nullptr;     // int4
  const Checkpoint::Entry* scales = nullptr;     // int4
  const Checkpoint::Entry* g_idx = nullptr;      // int4 from GPTQ (may be absent)
  const Checkpoint::Entry* scale_inv = nullptr;  // fp8: weight_scale_inv
};

/// The int4 weight of a checked linear layer (t.format == int4) in canonical form: unpack_awq or
/// unpack_gptq per q.method. Throws hogwild::Error as those do.
Int4Weight read_int4(const CheckedTensor& t, const QuantConfig& q);
/// The fp8 weight of a checked linear layer (t.format == fp8), copied out of the file.
Fp8Weight read_fp8(const CheckedTensor& t, const QuantConfig& q);

/// Matches every tensor of model_tensor_specs(c) against the checkpoint by name and shape (dtype is
/// BF16/F16/F32, checked when the headers were parsed); a linear layer whose linear_format is not
/// dense is matched by its stored pieces (names, dtypes I32/F16/F8_E4M3/F32, packed shapes). Throws hogwild::Error listing every problem
/// found: "tensor X: expected shape [a, b], got [c, d]", missing tensors, unexpected tensors
/// (ignorable ones, see is_ignorable_tensor, are skipped). `model_dir` names the model in messages.
std::vector<CheckedTensor> check_checkpoint(const ModelConfig& c, const Checkpoint& ck,
                                            const std::string& model_dir);

}  // namespace hogwild
