// The engine with and without prefix sharing (docs/ARCHITECTURE.md §2 "Prefix sharing"), for
// the tests of each backend (tests/hogwild/test_prefix_cache.cpp on the CPU,
// tests/cuda/test_cuda_session.cpp on the GPU): the same sessions run on a fresh backend twice,
// and the runs compared token by token and logit by logit.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "tests/hogwild/test_support.h"

namespace hogwild::testing::prefix_run {

// 150 bytes = 150 tokens of the toy codec: two full 64-token pages can be shared (the last
// prompt token is always fed).
inline const std::string kPrompt =
    "System: you are a careful solver. Think in short steps, check each result, and say the "
    "final answer once.\nQ: what is 12 times 13, minus 7, plus 1000?\n";

struct Log : SessionObserver {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<std::vector<float>> logits;  // every forward's logits rows (prefill's last, steps)
  explicit Log(int workers) : tokens(workers) {}
  void on_token(const TokenEvent& e) override { tokens[e.worker].push_back(e.token); }
  void on_forward(const ForwardRecord& r) override {
    if (r.logits) logits.push_back(*r.logits);
  }
};

inline SessionRequest greedy_request(const ByteCodec& codec, int workers, const std::string& format,
                                     const std::string& prompt, int64_t budget) {
  SessionRequest r;
  r.formatting = format == "plain" ? builtin_formatting("plain") : test_formatting(9);
  r.options.n_workers = workers;
  r.options.budget = budget;
  r.options.stop_on_answer = false;
  // A short finisher: its first forward holds its suffix (the run's blocks are read as they are).
  r.formatting.finisher.suffix = "\nSo: ";
  r.formatting.finisher.max_tokens = 6;
  r.prompt = codec.encode(prompt);
  return r;  // greedy, logits on the host
}

struct Planned {
  int workers;
  std::string format;
  std::string prompt;
};

struct Outcome {
  std::vector<Log> logs;
  std::vector<SessionResult> results;
  EngineStats stats;
  int64_t most_rows = 0;  // the largest forward of the later sessions, in tokens
};

// Runs `first` alone to its end, then the sessions of `then` on the same engine: one after the
// other (each alone: its forwards are the same in both runs, whatever their size), or together
// (forwards of at most 64 tokens: the CPU's per-row kernels, so that a row's bits depend on
// nothing else in its forward; beyond, BLAS rows may differ in the last bits with the batch's
// shape).
inline Outcome run_engine(const std::function<std::unique_ptr<Backend>()>& make_backend,
                          bool prefix_cache, bool together, const Planned& first,
                          const std::vector<Planned>& then) {
  ByteCodec codec;
  const std::unique_ptr<Backend> owned = make_backend();
  Backend& be = *owned;
  EngineOptions eo;
  eo.prefix_cache = prefix_cache;
  eo.prefill_chunk = together ? 16 : 32;
  eo.max_batch_tokens = 32;
  Engine engine(be, codec, eo);
  Outcome o;
  o.logs.reserve(1 + then.size());
  std::vector<SessionId> ids;
  auto submit = [&](const Planned& p) {
    SessionRequest r = greedy_request(codec, p.workers, p.format, p.prompt, 12);
    r.observer = &o.logs.emplace_back(p.workers);
    ids.push_back(engine.submit(std::move(r)));
  };
  auto run = [&] {
    while (!engine.idle()) {
      engine.step();
      o.most_rows = std::max(o.most_rows, engine.last_forward().tokens);
    }
  };
  submit(first);
  run();
  o.most_rows = 0;
  for (const Planned& p : then) {
    submit(p);
    if (!together) run();
  }
  run();
  for (SessionId id : ids) o.results.push_back(engine.take(id));
  o.stats = engine.stats();
  EXPECT_EQ(be.live_blocks(), 0);
  EXPECT_EQ(be.kv_used_tokens(), 0);
  EXPECT_EQ(be.kv_unowned_tokens(), 0);
  return o;
}

// The same tokens and logits, bit for bit, and the expected shares.
inline void expect_same_runs(const Outcome& on, const Outcome& off,
                             const std::vector<int64_t>& shared) {
  ASSERT_EQ(on.logs.size(), shared.size());
  for (size_t i = 0; i < on.logs.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(on.logs[i].tokens, off.logs[i].tokens);
    ASSERT_EQ(on.logs[i].logits.size(), off.logs[i].logits.size());
    EXPECT_GT(on.logs[i].logits.size(), 12u);  // the prompt row and every serial step's rows
    for (size_t f = 0; f < on.logs[i].logits.size(); ++f)
      ASSERT_EQ(on.logs[i].logits[f], off.logs[i].logits[f]) << "forward " << f;
    EXPECT_EQ(on.results[i].history_text, off.results[i].history_text);
    EXPECT_EQ(on.results[i].prompt_cached_tokens, shared[i]);
    EXPECT_EQ(off.results[i].prompt_cached_tokens, 0);
  }
  int64_t queried = 0, hits = 0;
  for (size_t i = 0; i < on.results.size(); ++i) {
    queried += on.results[i].prompt_tokens;
    hits += shared[i];
  }
  EXPECT_EQ(on.stats.prefix_query_tokens, queried);
  EXPECT_EQ(on.stats.prefix_hit_tokens, hits);
  EXPECT_EQ(on.stats.prompt_tokens, queried - hits);  // what was prefilled
  EXPECT_EQ(off.stats.prefix_query_tokens, 0);
  EXPECT_EQ(off.stats.prompt_tokens, queried);
}

// A prompt that shares only the first page with kPrompt.
inline const std::string kOther = kPrompt.substr(0, 70) + "Q: and 5 plus 9?\n";

}  // namespace hogwild::testing::prefix_run
