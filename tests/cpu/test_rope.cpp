// RoPE parameters against the HF formulas (values printed by tests/cpu/rope_reference.py, which
// follows transformers/modeling_rope_utils.py with float32 emulation) and rotation against
// hand-computed values.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "cpu/rope.h"

namespace hogwild::cpu {
namespace {

ModelConfig rope_cfg(int64_t head_dim, double theta, double partial = 1.0) {
  ModelConfig c;
  c.head_dim = head_dim;
  c.rope_theta = theta;
  c.partial_rotary_factor = partial;
  c.max_position_embeddings = 4096;
  return c;
}

void expect_rel(float got, double want, double tol = 1e-5) {
  EXPECT_LE(std::abs(got - want), tol * std::abs(want)) << "got " << got << " want " << want;
}

TEST(Rope, DefaultInvFreq) {
  // default theta=10000 dim=8 [0]=1 [1]=0.100000001 [2]=0.00999999978 [3]=0.00100000005
  const RopeParams p = compute_rope_params(rope_cfg(8, 10000.0));
  ASSERT_EQ(p.inv_freq.size(), 4u);
  const double want[4] = {1, 0.100000001, 0.00999999978, 0.00100000005};
  for (int i = 0; i < 4; ++i) expect_rel(p.inv_freq[i], want[i]);
  EXPECT_EQ(p.attention_scaling, 1.0f);
  // partial: head_dim 32 * 0.75 -> dim 24: [0]=1 [1]=0.464158893 [11]=0.000215443419
  const RopeParams q = compute_rope_params(rope_cfg(32, 10000.0, 0.75));
  EXPECT_EQ(q.rotary_dim, 24);
  ASSERT_EQ(q.inv_freq.size(), 12u);
  expect_rel(q.inv_freq[1], 0.464158893);
  expect_rel(q.inv_freq[11], 0.000215443419);
}

TEST(Rope, LinearInvFreq) {
  // linear theta=10000 dim=8 factor=4 [0]=0.25 [1]=0.0250000004 [2]=0.00249999994
  // [3]=0.000250000012
  ModelConfig c = rope_cfg(8, 10000.0);
  c.rope_scaling.rope_type = "linear";
  c.rope_scaling.factor = 4.0;
  const RopeParams p = compute_rope_params(c);
  const double want[4] = {0.25, 0.0250000004, 0.00249999994, 0.000250000012};
  for (int i = 0; i < 4; ++i) expect_rel(p.inv_freq[i], want[i]);
}

TEST(Rope, Llama3InvFreq) {
  // llama3 theta=5e5 dim=128 f=8 lff=1 hff=4 old=8192 [0]=1 [10]=0.128687382 [20]=0.0165604409
  // [25]=0.00594073068 [30]=0.00137189368 [40]=3.42810235e-05 [50]=4.41153452e-06
  // [63]=3.06892588e-07
  ModelConfig c = rope_cfg(128, 500000.0);
  c.rope_scaling.rope_type = "llama3";
  c.rope_scaling.factor = 8.0;
  c.rope_scaling.low_freq_factor = 1.0;
  c.rope_scaling.high_freq_factor = 4.0;
  c.rope_scaling.original_max_position_embeddings = 8192;
  const RopeParams p = compute_rope_params(c);
  const int idx[8] = {0, 10, 20, 25, 30, 40, 50, 63};
  const double want[8] = {1,
                          0.128687382,
                          0.0165604409,
                          0.00594073068,
                          0.00137189368,
                          3.42810235e-05,
                          4.41153452e-06,
                          3.06892588e-07};
  for (int i = 0; i < 8; ++i) expect_rel(p.inv_freq[idx[i]], want[i]);
  EXPECT_EQ(p.attention_scaling, 1.0f);
}

TEST(Rope, YarnInvFreqAndAttentionFactor) {
  // yarn theta=1e6 dim=128 f=4 orig=32768 low,high=(23, 40) af=1.13862944 [0]=1 [10]=0.115478203
  // [20]=0.0133352149 [30]=0.00106436096 [40]=4.44569851e-05 [63]=3.10234441e-07
  ModelConfig c = rope_cfg(128, 1000000.0);
  c.max_position_embeddings = 131072;
  c.rope_scaling.rope_type = "yarn";
  c.rope_scaling.factor = 4.0;
  c.rope_scaling.original_max_position_embeddings = 32768;
  const RopeParams p = compute_rope_params(c);
  const int idx[6] = {0, 10, 20, 30, 40, 63};
  const double want[6] = {
      1, 0.115478203, 0.0133352149, 0.00106436096, 4.44569851e-05, 3.10234441e-07};
  for (int i = 0; i < 6; ++i) expect_rel(p.inv_freq[idx[i]], want[i]);
  expect_rel(p.attention_scaling, 1.13862944);  // 0.1*ln(4)+1

  // yarn theta=1e4 dim=64 f=8 orig=2048 bf=16 bs=2 truncate=false attention_factor=1.25:
  // low,high=(10.4722408, 17.6969607) [0]=1 [5]=0.237137362 [8]=0.100000001 [12]=0.0257716198
  // [20]=0.000395284733 [31]=1.66690188e-05 (original_max_position_embeddings unset -> max_pos)
  ModelConfig d = rope_cfg(64, 10000.0);
  d.max_position_embeddings = 2048;
  d.rope_scaling.rope_type = "yarn";
  d.rope_scaling.factor = 8.0;
  d.rope_scaling.beta_fast = 16;
  d.rope_scaling.beta_slow = 2;
  d.rope_scaling.truncate = false;
  d.rope_scaling.attention_factor = 1.25;
  const RopeParams q = compute_rope_params(d);
  const int idx2[6] = {0, 5, 8, 12, 20, 31};
  const double want2[6] = {
      1, 0.237137362, 0.100000001, 0.0257716198, 0.000395284733, 1.66690188e-05};
  for (int i = 0; i < 6; ++i) expect_rel(q.inv_freq[idx2[i]], want2[i]);
  EXPECT_EQ(q.attention_scaling, 1.25f);
}

TEST(Rope, BadParametersThrow) {
  ModelConfig c = rope_cfg(8, 10000.0);
  c.rope_scaling.rope_type = "dynamic";
  EXPECT_THROW(compute_rope_params(c), Error);
  ModelConfig odd = rope_cfg(10, 10000.0, 0.3);  // int(10*0.3) = 3, odd
  EXPECT_THROW(compute_rope_params(odd), Error);
  ModelConfig z = rope_cfg(8, 10000.0);
  z.rope_scaling.rope_type = "linear";
  z.rope_scaling.factor = 0;
  EXPECT_THROW(compute_rope_params(z), Error);
}

TEST(Rope, RotateHalfPairingHandValues) {
  // head_dim 4, theta 10000: inv_freq [1, 0.01]; x=[1,2,3,4] at pos 1, pairs (0,2), (1,3):
  // [1cos1-3sin1, 2cos.01-4sin.01, 3cos1+1sin1, 4cos.01+2sin.01]
  RopeTable t(compute_rope_params(rope_cfg(4, 10000.0)));
  t.reserve(2);
  std::vector<float> x = {1, 2, 3, 4};
  t.rotate(x.data(), 1, 1, 1.0f);
  const double want[4] = {-1.9841106485555495, 1.959900667496664, 2.4623779024123156,
                          4.019799668334994};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(x[i], want[i], 1e-6);
  // Scale multiplies cos and sin (attention_scaling), position 0 is the identity times scale.
  std::vector<float> y = {1, 2, 3, 4};
  t.rotate(y.data(), 1, 0, 2.0f);
  EXPECT_EQ(y, (std::vector<float>{2, 4, 6, 8}));
}

TEST(Rope, PartialRotaryPassesTheRestAndRotationsCompose) {
  // head_dim 8, partial 0.5 -> rotary 4: values 4..7 pass through unscaled.
  RopeTable t(compute_rope_params(rope_cfg(8, 10000.0, 0.5)));
  t.reserve(100);
  std::vector<float> x = {0.3f, -1.2f, 0.7f, 2.0f, 5, 6, 7, 8, 1, 2, 3, 4, -5, -6, -7, -8};
  std::vector<float> a = x, b = x;
  t.rotate(a.data(), 2, 37, 1.5f);
  for (int h = 0; h < 2; ++h)
    for (int i = 4; i < 8; ++i) EXPECT_EQ(a[h * 8 + i], x[h * 8 + i]);
  // R(37) then R(21) == R(58) (promotion composes with the stored rotation).
  t.rotate(b.data(), 2, 58, 1.5f);
  t.rotate(a.data(), 2, 21, 1.0f);
  for (int i = 0; i < 16; ++i) EXPECT_NEAR(a[i], b[i], 2e-5);
}

}  // namespace
}  // namespace hogwild::cpu
