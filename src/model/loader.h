// Checking a checkpoint against the architecture's tensor table (tensor_names.h) without reading
// tensor data: used by load_model (weights.h), `hogwild info`, and backends that read the weights
// in their stored dtype (CUDA keeps bf16).
#pragma once

#include <string>
#include <vector>

#include "model/config.h"
#include "model/safetensors.h"
#include "model/tensor_names.h"

namespace hogwild {

struct CheckedTensor {
  TensorSpec spec;                 // name, kind, expected shape
  const Checkpoint::Entry* entry;  // where it lives: file, dtype, offsets
};

/// Matches every tensor of model_tensor_specs(c) against the checkpoint by name and shape (dtype is
/// BF16/F16/F32, checked when the headers were parsed). Throws hogwild::Error listing every problem
/// found: "tensor X: expected shape [a, b], got [c, d]", missing tensors, unexpected tensors
/// (ignorable ones, see is_ignorable_tensor, are skipped). `model_dir` names the model in messages.
std::vector<CheckedTensor> check_checkpoint(const ModelConfig& c, const Checkpoint& ck,
                                            const std::string& model_dir);

}  // namespace hogwild
