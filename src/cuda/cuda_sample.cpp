// CudaBackend::forward with a draw (ForwardBatch::draw): the forward, banned ids, and sampling
// on the device (sampling.h); only one token id per row comes back to the host.
#include <cmath>

#include "core/error.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "cuda/sampling.h"
#include "sampling/row_draw.h"

namespace hogwild::cuda {

void CudaBackend::sample_on_device(const ForwardBatch& batch, ForwardResult& out) {
  const std::vector<std::vector<int32_t>>& banned_sets = batch.draw.banned_sets;
  const std::vector<RowSampling>& rows = batch.draw.rows;
  std::vector<int32_t>& tokens = out.tokens;
  std::vector<float>* logits = batch.draw.keep_logits ? &out.logits : nullptr;
  if (!logits) out.logits.clear();
  check_row_sampling(batch);
  const int64_t want = static_cast<int64_t>(rows.size());
  auto alloc = [&](size_t bytes) {
    void* p = nullptr;
    HOGWILD_CUDA_CHECK(cudaMalloc(&p, bytes));
    allocations_.push_back(p);
    return p;
  };
  if (!sample_params_) {
    sample_params_ = alloc(static_cast<size_t>(logit_cap_) * sizeof(SampleParams));
    sample_out_ = static_cast<int32_t*>(alloc(static_cast<size_t>(logit_cap_) * 4));
  }
  // Every set once, concatenated; usually the same for many steps: uploaded when it changes.
  std::vector<int32_t> flat;
  std::vector<int32_t> begin(banned_sets.size());
  for (size_t i = 0; i < banned_sets.size(); ++i) {
    begin[i] = static_cast<int32_t>(flat.size());
    flat.insert(flat.end(), banned_sets[i].begin(), banned_sets[i].end());
  }
  if (flat != banned_host_) {
    if (static_cast<int64_t>(flat.size()) > banned_cap_) {
      banned_cap_ = static_cast<int64_t>(flat.size());
      banned_dev_ = static_cast<int32_t*>(alloc(static_cast<size_t>(banned_cap_) * 4));
    }
    if (!flat.empty())
      HOGWILD_CUDA_CHECK(cudaMemcpyAsync(banned_dev_, flat.data(), flat.size() * 4,
                                         cudaMemcpyHostToDevice, stream_));
    HOGWILD_CUDA_CHECK(cudaStreamSynchronize(stream_));
    banned_host_ = std::move(flat);
  }
  // One synchronisation per step: the sampling queues behind the forward (whose staging buffer
  // stays untouched until the next forward, after the sync below).
  const int64_t n = enqueue_forward(batch);
  HOGWILD_CHECK(n == want);
  tokens.assign(static_cast<size_t>(n), -1);
  if (logits) {  // the rows as forward() gives them, before ban_tokens writes -inf into them
    logits->resize(static_cast<size_t>(n * cfg_.vocab_size));
    if (n > 0)
      HOGWILD_CUDA_CHECK(cudaMemcpyAsync(logits->data(), logits_, logits->size() * 4,
                                         cudaMemcpyDeviceToHost, stream_));
  }
  if (n == 0) {
    HOGWILD_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return;
  }
  std::vector<SampleParams> params(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) {
    const RowSampling& s = rows[static_cast<size_t>(r)];
    params[r] = SampleParams{s.temperature, s.top_k, s.top_p, s.min_p, s.u, 0, 0};
    if (s.banned >= 0) {
      params[r].ban_begin = begin[s.banned];
      params[r].ban_count = static_cast<int32_t>(banned_sets[s.banned].size());
    }
  }
  HOGWILD_CUDA_CHECK(cudaMemcpyAsync(sample_params_, params.data(),
                                     params.size() * sizeof(SampleParams), cudaMemcpyHostToDevice,
                                     stream_));
  if (!banned_host_.empty())
    ban_tokens(logits_, n, cfg_.vocab_size, banned_dev_,
               static_cast<const SampleParams*>(sample_params_), stream_);
  sample_rows(logits_, static_cast<const SampleParams*>(sample_params_), sample_out_, n,
              cfg_.vocab_size, stream_);
  HOGWILD_CUDA_CHECK(
      cudaMemcpyAsync(tokens.data(), sample_out_, n * 4, cudaMemcpyDeviceToHost, stream_));
  HOGWILD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  for (int64_t r = 0; r < n; ++r)
    if (tokens[r] < 0)
      fail(
          "no token can be drawn for logits row {} (every logit is -inf or NaN after the banned "
          "tokens and filters)",
          r);
}

}  // namespace hogwild::cuda
