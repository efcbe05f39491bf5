// CpuBackend against independent references (tests/cpu/reference_model.h): dense causal forward
// for one block, the docs/ARCHITECTURE.md §2 naive hogwild reference for several workers and
// promotions.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "cpu/cpu_backend.h"
#include "tests/cpu/reference_model.h"
#include "tests/cpu/tiny_model.h"

namespace hogwild {
namespace {

using cpu::CpuBackend;

// max |a-b| / max(max|b|, 1e-3): relative to the logits' scale.
double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double num = 0, den = 1e-3;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    num = std::max(num, std::abs(static_cast<double>(a[i]) - b[i]));
    den = std::max(den, std::abs(static_cast<double>(b[i])));
  }
  return num / den;
}

std::vector<int32_t> test_ids(int n, int vocab, uint64_t seed) {
  test::TestRng r(seed);
  std::vector<int32_t> ids(n);
  for (auto& id : ids) id = static_cast<int32_t>(r.next() % vocab);
  return ids;
}

class PerArch : public ::testing::TestWithParam<test::TinySpec> {};

TEST_P(PerArch, OneBlockPrefillEqualsDenseCausal) {
  const ModelConfig cfg = test::tiny_config(GetParam());
  const ModelWeights w = test::tiny_weights(cfg, 11);
  const std::vector<int32_t> ids = test_ids(37, static_cast<int>(cfg.vocab_size), 5);
  const std::vector<float> ref = test::dense_logits(w, ids);

  CpuBackend be(w);
  const BlockId b = be.new_block();
  ForwardBatch fb;
  fb.views = {{b}};
  for (int32_t id : ids) fb.tokens.push_back({id, 0, b, true});
  std::vector<float> logits;
  be.forward(fb, logits);
  EXPECT_EQ(be.block_len(b), 37);
  EXPECT_LE(rel_err(logits, ref), 1e-5) << GetParam().name;
}

TEST_P(PerArch, IncrementalDecodeEqualsPrefill) {
  const ModelConfig cfg = test::tiny_config(GetParam());
  const ModelWeights w = test::tiny_weights(cfg, 12);
  const std::vector<int32_t> ids = test_ids(30, static_cast<int>(cfg.vocab_size), 6);
  const int64_t V = cfg.vocab_size;
  CpuBackend full(w), inc(w);
  const BlockId bf = full.new_block(), bi = inc.new_block();
  ForwardBatch fb;
  fb.views = {{bf}};
  for (int32_t id : ids) fb.tokens.push_back({id, 0, bf, true});
  std::vector<float> lf;
  full.forward(fb, lf);
  // Prefill the first 10 (logits of the last only), then one token per forward.
  ForwardBatch pb;
  pb.views = {{bi}};
  for (int i = 0; i < 10; ++i) pb.tokens.push_back({ids[i], 0, bi, i == 9});
  std::vector<float> li;
  inc.forward(pb, li);
  ASSERT_EQ(static_cast<int64_t>(li.size()), V);
  EXPECT_LE(rel_err(li, std::vector<float>(lf.begin() + 9 * V, lf.begin() + 10 * V)), 1e-5);
  for (int i = 10; i < 30; ++i) {
    ForwardBatch db;
    db.views = {{bi}};
    db.tokens = {{ids[i], 0, bi, true}};
    inc.forward(db, li);
    EXPECT_LE(rel_err(li, std::vector<float>(lf.begin() + i * V, lf.begin() + (i + 1) * V)), 1e-5)
        << GetParam().name << " step " << i;
  }
}

TEST_P(PerArch, AppendBlockRotatesKeysByOffsetAndCopiesValues) {
  const ModelConfig cfg = test::tiny_config(GetParam());
  const ModelWeights w = test::tiny_weights(cfg, 13);
  CpuBackend be(w);
  const BlockId dst = be.new_block(), src = be.new_block();
  ForwardBatch fb;
  fb.views = {{dst}, {src}};
  for (int32_t id : test_ids(7, static_cast<int>(cfg.vocab_size), 7))
    fb.tokens.push_back({id, 0, dst});
  for (int32_t id : test_ids(5, static_cast<int>(cfg.vocab_size), 8))
    fb.tokens.push_back({id, 1, src});
  std::vector<float> logits;
  be.forward(fb, logits);
  EXPECT_TRUE(logits.empty());
  std::vector<float> k_dst, v_dst, k_src, v_src, k_after, v_after;
  const int64_t layer = 1;
  be.read_block(dst, layer, k_dst, v_dst);
  be.read_block(src, layer, k_src, v_src);
  be.append_block(dst, src);
  EXPECT_EQ(be.block_len(dst), 12);
  EXPECT_EQ(be.block_len(src), 5);
  be.read_block(dst, layer, k_after, v_after);
  const int64_t kvd = cfg.num_key_value_heads * cfg.head_dim, hd = cfg.head_dim;
  const cpu::RopeParams& rp = be.rope();
  ASSERT_EQ(static_cast<int64_t>(k_after.size()), 12 * kvd);
  // Old part unchanged.
  for (int64_t i = 0; i < 7 * kvd; ++i) {
    EXPECT_EQ(k_after[i], k_dst[i]);
    EXPECT_EQ(v_after[i], v_dst[i]);
  }
  // Appended: values copied, keys = src keys rotated by 7 with unit cos/sin (double reference).
  for (int64_t j = 0; j < 5; ++j) {
    test::Vec k(k_src.begin() + j * kvd, k_src.begin() + (j + 1) * kvd);
    for (int64_t h = 0; h < cfg.num_key_value_heads; ++h) test::ref_rope(k, h * hd, rp, 7, 1.0);
    for (int64_t i = 0; i < kvd; ++i) {
      EXPECT_NEAR(k_after[(7 + j) * kvd + i], k[i], 1e-5 * (1 + std::abs(k[i])));
      EXPECT_EQ(v_after[(7 + j) * kvd + i], v_src[j * kvd + i]);
    }
  }
}

// Two workers over a shared prompt block, combined-like views with a separator block that occurs
// twice, several forwards with both workers' tokens in one batch, step promotions into the
// history, a new step block. Logits must match the naive reference at every forward.
TEST_P(PerArch, HogwildMatchesNaiveReference) {
  const ModelConfig cfg = test::tiny_config(GetParam());
  const ModelWeights w = test::tiny_weights(cfg, 14);
  const int V = static_cast<int>(cfg.vocab_size);
  CpuBackend be(w);
  test::NaiveBackend ref(w);
  auto both_new = [&] {
    const BlockId a = be.new_block(), b = ref.new_block();
    EXPECT_EQ(a, b);
    return a;
  };
  const BlockId hist = both_new(), sep = both_new(), s0 = both_new(), s1 = both_new();
  std::vector<float> got;
  auto run = [&](const ForwardBatch& fb, const char* what) {
    be.forward(fb, got);
    EXPECT_LE(rel_err(got, ref.forward(fb)), 1e-4) << GetParam().name << ": " << what;
  };
  // Prompt into history (worker 0 alone), separator tokens.
  ForwardBatch p;
  p.views = {{hist}};
  for (int32_t id : test_ids(9, V, 21)) p.tokens.push_back({id, 0, hist, true});
  run(p, "prompt");
  ForwardBatch s;
  s.views = {{hist, sep}};
  for (int32_t id : test_ids(2, V, 22)) s.tokens.push_back({id, 0, sep, true});
  run(s, "separator");
  test::TestRng r(23);
  BlockId cur0 = s0, cur1 = s1;
  for (int step = 0; step < 8; ++step) {
    ForwardBatch fb;
    // worker 0: [hist][cur1][sep][sep][cur0]  worker 1: [hist][cur0][sep][cur1]
    fb.views = {{hist, cur1, sep, sep, cur0}, {hist, cur0, sep, cur1}};
    const int n0 = 1 + step % 2, n1 = 1 + (step + 1) % 3;  // uneven token counts per worker
    for (int i = 0; i < n0; ++i) fb.tokens.push_back({int32_t(r.next() % V), 0, cur0, i == n0 - 1});
    for (int i = 0; i < n1; ++i) fb.tokens.push_back({int32_t(r.next() % V), 1, cur1, true});
    run(fb, "step");
    if (step == 3) {  // worker 0 finishes its step: promote into history, start a new step block
      be.append_block(hist, cur0);
      ref.append_block(hist, cur0);
      cur0 = both_new();
    }
    if (step == 5) {
      be.append_block(hist, cur1);
      ref.append_block(hist, cur1);
      cur1 = both_new();
    }
  }
  EXPECT_EQ(be.block_len(hist), ref.len(hist));
}

INSTANTIATE_TEST_SUITE_P(Archs, PerArch, ::testing::ValuesIn(test::tiny_cpu_specs()),
                         [](const auto& info) { return info.param.name; });

TEST(CpuBackend, BadInputThrowsError) {
  const ModelConfig cfg = test::tiny_config(test::tiny_spec("x", Arch::qwen3, false, false, false));
  // The capacity is counted in pages of kPageTokens (64): 8 tokens make one page.
  CpuBackend be(test::tiny_weights(cfg, 1), /*max_tokens=*/8);
  EXPECT_EQ(be.kv_capacity_tokens(), 64);
  const BlockId b = be.new_block();
  const BlockId other = be.new_block();
  std::vector<float> lg;
  ForwardBatch fb;
  fb.views = {{b}};
  fb.tokens = {{int32_t(cfg.vocab_size), 0, b, true}};
  EXPECT_THROW(be.forward(fb, lg), Error);  // token id out of range
  fb.tokens = {{1, 0, other, true}};
  EXPECT_THROW(be.forward(fb, lg), Error);  // target block not in the writer's view
  fb.tokens = {{1, 3, b, true}};
  EXPECT_THROW(be.forward(fb, lg), Error);  // no such worker
  fb.views = {{b, 99}};
  fb.tokens = {{1, 0, b, true}};
  EXPECT_THROW(be.forward(fb, lg), Error);  // unknown block in a view
  fb.views = {{b}};
  fb.tokens.assign(65, {1, 0, b, false});
  EXPECT_THROW(be.forward(fb, lg), Error);  // over the capacity
  EXPECT_EQ(be.block_len(b), 0);            // a rejected forward leaves the cache untouched
  EXPECT_THROW(be.truncate_block(b, 1), Error);
  ModelConfig sw = cfg;
  sw.sliding_window = 4;
  CpuBackend swb(test::tiny_weights(sw, 1));
  const BlockId s = swb.new_block();
  fb.views = {{s}};
  fb.tokens.assign(4, {1, 0, s, false});
  swb.forward(fb, lg);  // positions 0..3: inside the window
  fb.tokens.assign(1, {1, 0, s, true});
  EXPECT_THROW(swb.forward(fb, lg), Error);  // position 4 would need the window
  EXPECT_THROW(be.block_len(42), Error);
  ModelWeights bad = test::tiny_weights(cfg, 1);
  bad.layers[1].k_proj.pop_back();
  try {
    CpuBackend x(std::move(bad));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.layers.1.self_attn.k_proj.weight"),
              std::string::npos);
  }
}

// The one forward (Backend::forward): without a draw the logits rows come back; with one, the
// drawn ids (greedy here: the argmax of the same rows after the row's banned ids), and the rows
// too only when the draw keeps them. A malformed draw is refused before the cache changes.
TEST(CpuBackend, OneForwardReturnsLogitsOrTheDrawnIds) {
  const ModelConfig cfg = test::tiny_config(test::tiny_spec("x", Arch::qwen3, false, true, false));
  const ModelWeights w = test::tiny_weights(cfg, 4);
  const int64_t V = cfg.vocab_size;
  const std::vector<int32_t> ids = test_ids(6, static_cast<int>(V), 21);
  auto batch = [&](BlockId b) {
    ForwardBatch fb;
    fb.views = {{b}};
    for (size_t i = 0; i < ids.size(); ++i) fb.tokens.push_back({ids[i], 0, b, i == 3 || i == 5});
    return fb;
  };
  auto argmax = [&](const float* row, int32_t banned) {
    int32_t best = -1;
    for (int32_t v = 0; v < V; ++v)
      if (v != banned && (best < 0 || row[v] > row[best])) best = v;
    return best;
  };
  CpuBackend plain(w), drawing(w), keeping(w);
  std::vector<float> logits;
  plain.forward(batch(plain.new_block()), logits);
  ASSERT_EQ(static_cast<int64_t>(logits.size()), 2 * V);
  const int32_t top0 = argmax(logits.data(), -1);

  ForwardBatch fb = batch(drawing.new_block());
  fb.draw.rows.resize(2);  // greedy; row 0 may not take its argmax
  fb.draw.rows[0].banned = 0;
  fb.draw.banned_sets = {{top0}};
  ForwardResult out;
  drawing.forward(fb, out);
  EXPECT_EQ(out.tokens,
            (std::vector<int32_t>{argmax(logits.data(), top0), argmax(logits.data() + V, -1)}));
  EXPECT_TRUE(out.logits.empty());
  std::vector<float> unused;
  EXPECT_THROW(drawing.forward(fb, unused), Error);  // a draw needs a ForwardResult

  fb = batch(keeping.new_block());
  fb.draw.rows.resize(2);
  fb.draw.keep_logits = true;
  ForwardResult kept;
  keeping.forward(fb, kept);
  EXPECT_EQ(kept.logits, logits);  // the same rows, bit for bit, before any banned id
  EXPECT_EQ(kept.tokens, (std::vector<int32_t>{top0, argmax(logits.data() + V, -1)}));

  const BlockId c = keeping.new_block();
  fb = batch(c);
  fb.draw.rows.resize(1);  // one row for two tokens that want logits
  EXPECT_THROW(keeping.forward(fb, kept), Error);
  fb.draw.rows.resize(2);
  fb.draw.rows[1].banned = 3;  // no such set
  EXPECT_THROW(keeping.forward(fb, kept), Error);
  EXPECT_EQ(keeping.block_len(c), 0);
}

TEST(CpuBackend, TruncateAndReuseBlocks) {
  const ModelConfig cfg = test::tiny_config(test::tiny_spec("x", Arch::qwen3, false, true, false));
  const ModelWeights w = test::tiny_weights(cfg, 3);
  const std::vector<int32_t> ids = test_ids(12, static_cast<int>(cfg.vocab_size), 9);
  CpuBackend be(w);
  const BlockId b = be.new_block();
  ForwardBatch fb;
  fb.views = {{b}};
  for (int i = 0; i < 12; ++i) fb.tokens.push_back({ids[i], 0, b, false});
  std::vector<float> lg;
  be.forward(fb, lg);
  // Drop the last 4 and feed different tokens: equals a fresh run on the new sequence.
  be.truncate_block(b, 8);
  std::vector<int32_t> ids2(ids.begin(), ids.begin() + 8);
  ids2.push_back(3);
  ids2.push_back(4);
  ForwardBatch tb;
  tb.views = {{b}};
  tb.tokens = {{3, 0, b, false}, {4, 0, b, true}};
  be.forward(tb, lg);
  const std::vector<float> ref = test::dense_logits(w, ids2);
  EXPECT_LE(rel_err(lg, std::vector<float>(ref.end() - cfg.vocab_size, ref.end())), 1e-5);
  // Free + new reuses the id and starts empty.
  be.free_block(b);
  EXPECT_THROW(be.block_len(b), Error);
  EXPECT_EQ(be.new_block(), b);
  EXPECT_EQ(be.block_len(b), 0);
}

// The bench hooks: random K/V of a given length, and the byte counts of a decode step.
TEST(CpuBackend, FillBlockRandomAndStepBytes) {
  for (const bool tied : {false, true}) {
    const ModelConfig cfg =
        test::tiny_config(test::tiny_spec("x", Arch::qwen3, /*bias=*/true, /*qk_norm=*/true, tied));
    CpuBackend be(test::tiny_weights(cfg, 1));
    // Every parameter once, but the embedding table only when it is also the output projection.
    const int64_t params = cfg.num_parameters() - (tied ? 0 : cfg.vocab_size * cfg.hidden_size);
    EXPECT_EQ(be.weight_bytes_per_step(), 4 * params);
    EXPECT_EQ(be.kv_bytes_per_token(),
              2 * 4 * cfg.num_hidden_layers * cfg.num_key_value_heads * cfg.head_dim);
  }
  const ModelConfig cfg = test::tiny_config(test::tiny_spec("x", Arch::qwen3, false, true, false));
  CpuBackend be(test::tiny_weights(cfg, 1));
  const BlockId a = be.new_block(), b = be.new_block(), c = be.new_block();
  be.fill_block_random(a, 70, 5);
  be.fill_block_random(b, 70, 5);
  be.fill_block_random(c, 3, 6);
  EXPECT_EQ(be.block_len(a), 70);
  EXPECT_EQ(be.kv_used_tokens(), 5 * 64);  // pages: 2 + 2 + 1
  std::vector<float> ka, va, kb, vb, kc, vc;
  for (int64_t l = 0; l < cfg.num_hidden_layers; ++l) {
    be.read_block(a, l, ka, va);
    be.read_block(b, l, kb, vb);
    be.read_block(c, l, kc, vc);
    ASSERT_EQ(ka.size(), size_t(70 * cfg.num_key_value_heads * cfg.head_dim));
    EXPECT_EQ(ka, kb);  // same seed, same values
    EXPECT_EQ(va, vb);
    EXPECT_NE(ka, va);
    EXPECT_NE(std::vector<float>(ka.begin(), ka.begin() + kc.size()), kc);
    float lo = 1, hi = -1;
    for (const auto* v : {&ka, &va, &kc, &vc})
      for (float x : *v) lo = std::min(lo, x), hi = std::max(hi, x);
    EXPECT_GE(lo, -1.0f);
    EXPECT_LT(hi, 1.0f);
    EXPECT_LT(lo, -0.9f);  // spread over [-1, 1)
    EXPECT_GT(hi, 0.9f);
  }
  EXPECT_THROW(be.fill_block_random(a, 1, 1), Error);   // not empty
  EXPECT_THROW(be.fill_block_random(99, 1, 1), Error);  // unknown block
  CpuBackend small(test::tiny_weights(cfg, 1), /*max_tokens=*/64);
  const BlockId d = small.new_block();
  EXPECT_THROW(small.fill_block_random(d, 65, 1), Error);  // beyond the one-page capacity
  EXPECT_EQ(small.block_len(d), 0);
}

}  // namespace
}  // namespace hogwild
