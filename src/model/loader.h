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
  TensorSpec spec;                 // name, kind, expected (dense) shape
  const Checkpoint::Entry* entry;  // dense: the tensor; int4: qweight; fp8: the F8_E4M3 weight
  WeightFormat format = WeightFormat::dense;
  const Checkpoint::Entry* qzeros = nullptr;     // int4
  const Checkpoint::Entry* scales = nullptr;     // int4
  const Checkpoint::Entry* g_idx = nullptr;      // int4 from GPTQ (may be absent)
  const Checkpoint::Entry* scale_inv = nullptr;  // fp8: weight_scale_inv
};

/// The HF module name of tensor spec s: its name without ".weight" ("model.layers.0.mlp.up_proj").
std::string module_name(const TensorSpec& s);
/// Whether s is a linear layer that quantization_config may quantize: a matrix other than
/// embed_tokens and lm_head (q/k/v/o, gate/up/down, Phi3's fused qkv_proj and gate_up_proj, a MoE
/// layer's per-expert projections; not a MoE router, which stays dense, nor the fused 3-D experts
/// tensors).
bool is_quantizable_linear(const TensorSpec& s);
/// The format of tensor s in a checkpoint with quantization q: linear_format(q, module) for a
/// quantizable linear layer, dense for everything else.
WeightFormat tensor_format(const QuantConfig& q, const TensorSpec& s);

/// The int4 weight of a checked linear layer (t.format == int4) in canonical form: unpack_awq or
/// unpack_gptq per q.method. Throws hogwild::Error as those do.
Int4Weight read_int4(const CheckedTensor& t, const QuantConfig& q);
/// The fp8 weight of a checked linear layer (t.format == fp8), copied out of the file.
Fp8Weight read_fp8(const CheckedTensor& t, const QuantConfig& q);

/// Bytes the checkpoint stores for t: the dense tensor, or every stored piece of a quantized layer.
uint64_t stored_bytes(const CheckedTensor& t);

/// Matches every tensor of model_tensor_specs(c, layout) against the checkpoint by name, dtype and
/// shape, where layout is ExpertLayout::fused when the first MoE layer of the checkpoint holds
/// `mlp.experts.gate_up_proj` (transformers 5.x form; dense only), else per_expert. A
/// dense tensor is BF16/F16/F32 with the table's shape; a linear layer (a matrix other than
/// embed_tokens and lm_head) whose linear_format(c.quantization_config, module) is not dense is
/// matched by its stored pieces (model/quant.h): int4 `<module>.qweight` I32 (AWQ [in, out/8], GPTQ
/// [in/8, out]), `.qzeros` I32 [in/G, out/8], `.scales` F16 or BF16 [in/G, out], GPTQ `.g_idx` I32
/// [in] (required with desc_act, else optional); fp8 `.weight` F8_E4M3 [out, in] and
/// `.weight_scale_inv` F32 or BF16 [ceil(out/bn), ceil(in/bk)]. A fused Phi3 qkv_proj/gate_up_proj
/// is one quantized layer. Throws hogwild::Error listing every problem found: "tensor X: expected
/// shape [a, b], got [c, d]", "tensor X: expected dtype I32, got F16", a layer whose shape cannot
/// hold the format, missing tensors, unexpected tensors (ignorable ones, see is_ignorable_tensor,
/// are skipped). `model_dir` names the model in messages.
std::vector<CheckedTensor> check_checkpoint(const ModelConfig& c, const Checkpoint& ck,
                                            const std::string& model_dir);

}  // namespace hogwild
