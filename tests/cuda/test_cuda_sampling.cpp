// GPU sampling against the CPU sampler (src/sampling/sampler.h): for random logits rows (some
// banned: -inf) and temperature / top-k / top-p / min-p settings (top-k survivors that fit the
// kernel's shared memory and more that do not), the GPU's draw for uniform u must be the token the
// CPU's processed probabilities give by inverse CDF in vocabulary order (u near a CDF boundary,
// within float rounding, is skipped). Greedy picks the first maximal index.
#include "cuda/sampling.h"
#include "sampling/sampler.h"
#include "tests/cpu/tiny_model.h"
#include "tests/cuda/cuda_test_util.h"

namespace hogwild::test {
namespace {

struct Setting {
  float temperature;
  int32_t top_k;
  float top_p;
  float min_p;
};

TEST(CudaSampling, DrawsMatchCpuSamplerProbabilities) {
  HOGWILD_REQUIRE_GPU();
  TestRng rng(3);
  const std::vector<Setting> settings = {
      {1.0f, 0, 1.0f, 0.0f}, {0.7f, 50, 1.0f, 0.0f},   {0.6f, 20, 0.95f, 0.0f},
      {1.3f, 0, 0.8f, 0.0f}, {1.0f, 0, 1.0f, 0.05f},   {0.8f, 40, 0.9f, 0.1f},
      {1.0f, 1, 1.0f, 0.0f}, {0.9f, 5000, 0.9f, 0.0f}, {1.0f, 1500, 1.0f, 0.02f}};
  for (int64_t V : {7, 1000, 151936}) {
    for (const Setting& st : settings) {
      const int n_u = 64;
      std::vector<float> logits = rng.vec(V, 6.0f);
      logits[V / 3] = logits[V / 2];                              // a tie
      for (int64_t i = 5; i < V; i += 13) logits[i] = -INFINITY;  // banned ids
      std::vector<float> rows;
      std::vector<cuda::SampleParams> params;
      for (int k = 0; k < n_u; ++k) {
        rows.insert(rows.end(), logits.begin(), logits.end());
        params.push_back({st.temperature, st.top_k, st.top_p, st.min_p, (k + 0.5f) / n_u});
      }
      DeviceArray<float> dl(rows);
      std::vector<int32_t> out_h(n_u);
      DeviceArray<int32_t> out(n_u);
      auto* pp = static_cast<cuda::SampleParams*>(nullptr);
      HOGWILD_CUDA_CHECK(cudaMalloc(&pp, params.size() * sizeof(cuda::SampleParams)));
      HOGWILD_CUDA_CHECK(cudaMemcpy(pp, params.data(), params.size() * sizeof(cuda::SampleParams),
                                    cudaMemcpyHostToDevice));
      cuda::sample_rows(dl.p, pp, out.p, n_u, V, nullptr);
      out_h = out.download();
      cudaFree(pp);

      SamplingParams sp;
      sp.do_sample = true, sp.temperature = st.temperature, sp.top_k = st.top_k;
      sp.top_p = st.top_p, sp.min_p = st.min_p;
      const std::vector<float> prob = Sampler(sp).probabilities(logits, {});
      for (int k = 0; k < n_u; ++k) {
        const double u = params[k].u;
        double acc = 0;
        int32_t want = -1;
        bool near_edge = false;
        for (int64_t i = 0; i < V; ++i) {
          if (prob[i] <= 0) continue;
          acc += prob[i];
          want = static_cast<int32_t>(i);
          if (std::fabs(acc - u) < 1e-4) near_edge = true;
          if (u < acc) break;
        }
        if (near_edge) continue;
        EXPECT_EQ(out_h[k], want) << "V " << V << " T " << st.temperature << " k " << st.top_k
                                  << " p " << st.top_p << " min_p " << st.min_p << " u " << u;
      }
    }
    // greedy
    std::vector<float> logits = rng.vec(V, 6.0f);
    const int64_t best = std::max_element(logits.begin(), logits.end()) - logits.begin();
    logits[(best + 1) % V] = logits[best];  // tie: the lower index wins
    const int64_t first = std::max_element(logits.begin(), logits.end()) - logits.begin();
    DeviceArray<float> dl(logits);
    DeviceArray<int32_t> out(1);
    cuda::SampleParams g{0.0f, 0, 1.0f, 0.0f, 0.5f};
    DeviceArray<cuda::SampleParams> dp(std::vector<cuda::SampleParams>{g});
    cuda::sample_rows(dl.p, dp.p, out.p, 1, V, nullptr);
    EXPECT_EQ(out.download()[0], first) << "greedy V " << V;
  }
}

}  // namespace
}  // namespace hogwild::test
