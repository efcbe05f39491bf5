// Automatic prefix caching (docs/ARCHITECTURE.md §2 "Prefix sharing"): the block table's pages,
// reference counts, chained hashes and idle pages against hand-computed values (pages of 4
// tokens), and the engine on the CPU backend: sessions whose prompts begin alike give the same
// tokens and logits, bit for bit, with and without the cache, sessions submitted together (the n
// choices of a request) prefill their common pages once, and admission reserves only the pages
// a session newly takes.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.h"
#include "cpu/cpu_backend.h"
#include "engine/engine.h"
#include "kv/block_table.h"
#include "tests/hogwild/prefix_cache_run.h"
#include "tests/hogwild/test_support.h"

namespace hogwild::testing {
namespace {

std::vector<int32_t> iota_tokens(int n, int32_t first) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

TEST(PrefixCache, OnlyFullComputedPagesAreSharedAndEveryHolderIsCounted) {
  BlockTable t(8, 4);  // 8 pages of 4 tokens
  const std::vector<int32_t> p = iota_tokens(10, 100);
  const BlockId a = t.new_block();
  t.grow(a, 10);                                     // pages 0, 1, 2 (2 holds tokens 8, 9)
  EXPECT_EQ(t.find_prefix(p.data(), 10).tokens, 0);  // nothing cached before publish
  const auto added = t.publish(a, p.data(), 10);
  // The two full pages only; the third (2 of 4 tokens) stays private.
  EXPECT_EQ(added, (std::vector<std::pair<int64_t, int32_t>>{{0, 0}, {1, 1}}));
  EXPECT_EQ(t.cached_pages(), 2);
  EXPECT_TRUE(t.publish(a, p.data(), 10).empty());  // already cached
  PrefixHit hit = t.find_prefix(p.data(), 10);
  EXPECT_EQ(hit.tokens, 8);
  EXPECT_EQ(hit.idle_pages, 0);
  EXPECT_EQ(t.find_prefix(p.data(), 7).tokens, 4);  // only whole pages within n

  const BlockId b = t.new_block();
  EXPECT_EQ(t.share(b, p.data(), 9), 8);
  EXPECT_EQ(t.pages(b), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(t.len(b), 8);
  EXPECT_EQ(t.page_refs(0), 2);
  EXPECT_EQ(t.page_refs(1), 2);
  EXPECT_EQ(t.page_refs(2), 1);
  EXPECT_EQ(t.used_pages(), 3);  // shared pages counted once
  EXPECT_EQ(t.free_pages(), 5);
  // b's next token goes to a page of its own.
  t.grow(b, 9);
  EXPECT_EQ(t.pages(b), (std::vector<int32_t>{0, 1, 3}));
  EXPECT_EQ(t.used_pages(), 4);
  EXPECT_THROW(t.share(b, p.data(), 9), Error);  // only into an empty block

  // A different token in the second page: only the first page hits.
  std::vector<int32_t> q = p;
  q[5] = 7;
  EXPECT_EQ(t.find_prefix(q.data(), 10).tokens, 4);

  // The last holder leaving returns a page to the free count.
  t.free_block(a);
  EXPECT_EQ(t.page_refs(0), 1);
  EXPECT_EQ(t.page_refs(2), 0);
  EXPECT_EQ(t.used_pages(), 3);  // 0, 1 (b), 3
  t.free_block(b);
  EXPECT_EQ(t.used_pages(), 0);
  EXPECT_EQ(t.free_pages(), 8);
  EXPECT_EQ(t.idle_pages(), 2);  // pages 0 and 1 keep their hashes
  hit = t.find_prefix(p.data(), 10);
  EXPECT_EQ(hit.tokens, 8);
  EXPECT_EQ(hit.idle_pages, 2);
}

TEST(PrefixCache, TheHashChainsEachPageToEverythingBeforeIt) {
  BlockTable t(8, 4);
  const std::vector<int32_t> x = {1, 2, 3, 4, 5, 6, 7, 8};  // pages A B
  const BlockId a = t.new_block();
  t.grow(a, 8);
  t.publish(a, x.data(), 8);
  EXPECT_EQ(t.find_prefix(x.data(), 8).tokens, 8);
  // The same second page after another first page does not hit...
  const std::vector<int32_t> y = {9, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(t.find_prefix(y.data(), 8).tokens, 0);
  // ...nor does it as a first page.
  const std::vector<int32_t> z = {5, 6, 7, 8};
  EXPECT_EQ(t.find_prefix(z.data(), 4).tokens, 0);
  EXPECT_NE(BlockTable::page_hash(0, x.data() + 4, 4),
            BlockTable::page_hash(BlockTable::page_hash(0, x.data(), 4), x.data() + 4, 4));
  // Published after y's own first page, the same tokens are a page of their own.
  const BlockId b = t.new_block();
  t.grow(b, 8);
  EXPECT_EQ(t.publish(b, y.data(), 8).size(), 2u);
  EXPECT_EQ(t.cached_pages(), 4);
  EXPECT_EQ(t.find_prefix(y.data(), 8).tokens, 8);
}

TEST(PrefixCache, IdlePagesAreEvictedLeastRecentlyUsedFirstWhenThePoolNeedsThem) {
  BlockTable t(4, 4);  // 4 pages
  const std::vector<int32_t> p = iota_tokens(8, 1);
  const BlockId a = t.new_block();
  t.grow(a, 8);  // pages 0, 1
  t.publish(a, p.data(), 8);
  t.free_block(a);  // drops page 1 then page 0: page 1 is the least recently used
  EXPECT_EQ(t.idle_pages(), 2);
  EXPECT_EQ(t.free_pages(), 4);
  const BlockId c = t.new_block();
  t.grow(c, 8);  // the two pages never handed out (2, 3): no eviction yet
  EXPECT_EQ(t.pages(c), (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(t.find_prefix(p.data(), 8).tokens, 8);
  EXPECT_TRUE(t.take_evicted().empty());
  const BlockId d = t.new_block();
  t.grow(d, 4);  // the pool has only idle pages left: page 1 goes
  EXPECT_EQ(t.pages(d), (std::vector<int32_t>{1}));
  EXPECT_EQ(t.take_evicted(), (std::vector<int32_t>{1}));
  EXPECT_EQ(t.find_prefix(p.data(), 8).tokens, 4);  // the first page still hits
  // Shared again, page 0 is in use: nothing is left to evict.
  const BlockId e = t.new_block();
  EXPECT_EQ(t.share(e, p.data(), 8), 4);
  EXPECT_EQ(t.free_pages(), 0);
  EXPECT_THROW(t.grow(d, 5), Error);  // KV cache full
  t.free_block(e);
  t.grow(d, 5);  // now page 0 is evicted for it
  EXPECT_EQ(t.pages(d), (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(t.find_prefix(p.data(), 8).tokens, 0);
  EXPECT_EQ(t.cached_pages(), 0);
}

TEST(PrefixCache, WithoutAPoolLimitAtMostThirtyTwoPagesStayIdle) {
  BlockTable t(0, 4);
  const int n = 4 * 40;  // 40 pages
  const std::vector<int32_t> p = iota_tokens(n, 1);
  const BlockId a = t.new_block();
  t.grow(a, n);
  t.publish(a, p.data(), n);
  EXPECT_EQ(t.cached_pages(), 40);
  t.free_block(a);  // pages dropped from the last: pages 39..32 go first
  EXPECT_EQ(t.idle_pages(), BlockTable::kMaxIdlePagesUnbounded);
  EXPECT_EQ(t.find_prefix(p.data(), n).tokens, 4 * 32);
}

TEST(PrefixCache, TruncateRefusesToCutIntoASharedPageAndUncachesAPrivateOne) {
  BlockTable t(8, 4);
  const std::vector<int32_t> p = iota_tokens(8, 1);
  const BlockId a = t.new_block(), b = t.new_block();
  t.grow(a, 8);
  t.publish(a, p.data(), 8);
  t.share(b, p.data(), 8);
  try {
    t.truncate(b, 6);
    FAIL() << "cut into a shared page";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "truncate_block: block 1 shares its page 1 (tokens [4, 8)) with other blocks "
              "through the prefix cache, and writing it again would change what they read; "
              "truncate at a multiple of 4 tokens");
  }
  EXPECT_EQ(t.len(b), 8);  // nothing changed
  t.truncate(b, 4);        // at a page boundary: b lets go of page 1
  EXPECT_EQ(t.page_refs(1), 1);
  t.truncate(a, 6);  // page 1 is a's alone: it leaves the cache, a writes it again
  EXPECT_EQ(t.take_evicted(), (std::vector<int32_t>{1}));
  EXPECT_EQ(t.find_prefix(p.data(), 8).tokens, 4);
  t.grow(a, 8);
  EXPECT_EQ(t.pages(a), (std::vector<int32_t>{0, 1}));
}

TEST(PrefixCache, UnownedPagesAreTheSharedOnesNoFillingBlockHolds) {
  BlockTable t(8, 4);
  const std::vector<int32_t> p = iota_tokens(8, 1);
  const BlockId a = t.new_block(), b = t.new_block();
  t.grow(a, 9);  // pages 0, 1, 2
  t.publish(a, p.data(), 8);
  t.share(b, p.data(), 8);
  EXPECT_EQ(t.unowned_pages(), 0);  // a filled them and holds them
  t.free_block(a);
  EXPECT_EQ(t.unowned_pages(), 2);  // b holds pages 0, 1 on nobody's reservation
  EXPECT_EQ(t.used_pages(), 2);
  t.free_block(b);
  EXPECT_EQ(t.unowned_pages(), 0);
  const BlockId c = t.new_block();
  t.share(c, p.data(), 8);  // from the idle pages
  EXPECT_EQ(t.unowned_pages(), 2);
  EXPECT_EQ(t.used_pages(), 2);
  t.free_block(c);
  EXPECT_EQ(t.unowned_pages(), 0);
  EXPECT_EQ(t.used_pages(), 0);
}

// ---- the engine on the CPU backend

using namespace prefix_run;

std::unique_ptr<Backend> cpu_backend() {
  return std::make_unique<cpu::CpuBackend>(session_model(session_specs()[2]));
}

TEST(PrefixCacheEngine, HogwildAndPlainSessionsGiveTheSameRunWithAndWithoutTheCache) {
  ASSERT_EQ(kPrompt.size(), 150u);
  // Hogwild (2 workers) after hogwild; then, one after the other on the same engine, hogwild
  // again, plain generation (one worker, nothing inserted), 3 workers, and a prompt that shares
  // only the first page. Each later one shares the pages the first cached: two pages (128
  // tokens) of the same prompt, one page (64) of the other.
  const Planned first{2, "test", kPrompt};
  const std::vector<Planned> then = {
      {2, "test", kPrompt}, {1, "plain", kPrompt}, {3, "test", kPrompt}, {2, "test", kOther}};
  expect_same_runs(run_engine(cpu_backend, true, false, first, then),
                   run_engine(cpu_backend, false, false, first, then), {0, 128, 128, 128, 64});
}

TEST(PrefixCacheEngine, SessionsTogetherGiveTheSameRunWithAndWithoutTheCache) {
  // Five sessions sharing every forward after the first one ended: two and one workers, the same
  // prompt or only its first page (formatting "plain": no layout texts, so that every forward
  // stays within 64 tokens).
  const Planned first{2, "plain", kPrompt};
  const std::vector<Planned> then = {{2, "plain", kPrompt},
                                     {1, "plain", kPrompt},
                                     {2, "plain", kOther},
                                     {1, "plain", kPrompt},
                                     {2, "plain", kOther}};
  const Outcome on = run_engine(cpu_backend, true, true, first, then);
  const Outcome off = run_engine(cpu_backend, false, true, first, then);
  EXPECT_LE(on.most_rows, 64);
  EXPECT_LE(off.most_rows, 64);
  EXPECT_GT(on.most_rows, 2);  // the sessions did share forwards
  expect_same_runs(on, off, {0, 128, 128, 64, 128, 64});
}

// The n choices of one request: four sessions of the same prompt submitted together, sampled
// with seeds 1 + 8 i (the server's seed + 8 i), in forwards of at most 32 tokens (so that each
// row's bits depend on nothing else in its forward).
Outcome run_choices(bool prefix_cache, std::vector<int64_t>* prefill_chunks = nullptr) {
  ByteCodec codec;
  cpu::CpuBackend be(session_model(session_specs()[2]));
  EngineOptions eo;
  eo.prefix_cache = prefix_cache;
  eo.prefill_chunk = 16;
  eo.max_batch_tokens = 32;
  Engine engine(be, codec, eo);
  Outcome o;
  o.logs.reserve(4);
  std::vector<SessionId> ids;
  for (int i = 0; i < 4; ++i) {
    SessionRequest r = greedy_request(codec, 1, "plain", kPrompt, 12);
    r.sampling.do_sample = true;
    r.sampling.temperature = 1.5f;
    r.sampling.seed = 1 + 8 * static_cast<uint64_t>(i);
    r.observer = &o.logs.emplace_back(1);
    ids.push_back(engine.submit(std::move(r)));
  }
  while (!engine.idle()) {
    engine.step();
    o.most_rows = std::max(o.most_rows, engine.last_forward().tokens);
    if (prefill_chunks) prefill_chunks->push_back(engine.last_forward().prefill_chunks);
  }
  for (SessionId id : ids) o.results.push_back(engine.take(id));
  o.stats = engine.stats();
  EXPECT_EQ(be.live_blocks(), 0);
  EXPECT_EQ(be.kv_unowned_tokens(), 0);
  return o;
}

TEST(PrefixCacheEngine, ChoicesSubmittedTogetherPrefillTheirPromptOnce) {
  // The first choice prefills the 150-token prompt; the three others wait until its two full
  // pages (128 tokens) are cached, share them and prefill the 22 tokens after them.
  std::vector<int64_t> chunks_on, chunks_off;
  const Outcome on = run_choices(true, &chunks_on);
  const Outcome off = run_choices(false, &chunks_off);
  EXPECT_LE(on.most_rows, 32);
  EXPECT_LE(off.most_rows, 32);
  expect_same_runs(on, off, {0, 128, 128, 128});
  EXPECT_EQ(on.stats.prompt_tokens, 150 + 3 * 22);
  EXPECT_EQ(off.stats.prompt_tokens, 4 * 150);
  EXPECT_EQ(on.stats.prefix_query_tokens, 600);
  EXPECT_EQ(on.stats.prefix_hit_tokens, 384);
  // With the cache, steps 1-8 feed the first choice alone, 16 tokens each, until its tokens
  // [0, 128) are cached; without it, two choices share each 32-token forward.
  ASSERT_GE(chunks_on.size(), 9u);
  EXPECT_EQ(std::vector<int64_t>(chunks_on.begin(), chunks_on.begin() + 9),
            (std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 1, 2}));
  EXPECT_EQ(chunks_off.front(), 2);
  // The choices were sampled apart: not all alike.
  EXPECT_NE(on.logs[0].tokens, on.logs[1].tokens);
}

// Another request's prompt begins like the choices' for two pages: the first choice waits for
// those, shares them and prefills its 150 tokens after them; the two others wait for the first
// choice and share its four whole pages (256 of its 278 tokens, the last one always fed), so each
// prefills only the last 22 tokens.
TEST(PrefixCacheEngine, ChoicesWaitingForAnotherRequestPrefillTheirOwnPagesOnce) {
  ByteCodec codec;
  cpu::CpuBackend be(session_model(session_specs()[2]));
  EngineOptions eo;
  eo.prefill_chunk = 64;
  Engine engine(be, codec, eo);
  const std::string longer = kPrompt.substr(0, 128) + kPrompt;  // 278 tokens
  const SessionId a = engine.submit(greedy_request(codec, 1, "plain", kPrompt, 4));
  std::vector<SessionId> choices;
  for (int i = 0; i < 3; ++i)
    choices.push_back(engine.submit(greedy_request(codec, 1, "plain", longer, 4)));
  engine.run_until_idle();
  EXPECT_EQ(engine.take(a).prompt_cached_tokens, 0);
  std::vector<int64_t> cached;
  for (SessionId id : choices) cached.push_back(engine.take(id).prompt_cached_tokens);
  EXPECT_EQ(cached, (std::vector<int64_t>{128, 256, 256}));
  EXPECT_EQ(engine.stats().prompt_tokens, 150 + 150 + 22 + 22);
  EXPECT_EQ(engine.stats().prefix_hit_tokens, 128 + 256 + 256);
  EXPECT_EQ(engine.kv_reserved(), 0);
}

TEST(PrefixCacheEngine, AWaitingChoiceReservesItsWholeNeedUntilItShares) {
  ByteCodec codec;
  cpu::CpuBackend be(session_model(session_specs()[2]));
  const SessionRequest probe = greedy_request(codec, 1, "plain", kPrompt, 8);
  const int64_t need = Session::kv_tokens_needed(probe.options, probe.formatting, codec,
                                                 be.config(), static_cast<int64_t>(kPrompt.size()));
  EngineOptions eo;
  eo.prefill_chunk = 64;
  Engine engine(be, codec, eo);
  const SessionId a = engine.submit(greedy_request(codec, 1, "plain", kPrompt, 8));
  const SessionId b = engine.submit(greedy_request(codec, 1, "plain", kPrompt, 8));
  engine.step();  // a: tokens [0, 64); b waits for two pages
  EXPECT_EQ(engine.active_sessions(), 2);
  EXPECT_EQ(engine.kv_reserved(), 2 * need);
  EXPECT_EQ(engine.last_forward().prefill_chunks, 1);
  EXPECT_EQ(engine.last_forward().tokens, 64);
  engine.step();  // a: [64, 128): both pages cached after this forward
  EXPECT_EQ(engine.kv_reserved(), 2 * need);
  engine.step();  // b shares them: a's last 22 tokens and b's beside them
  EXPECT_EQ(engine.kv_reserved(), 2 * need - 128);
  EXPECT_EQ(engine.last_forward().prefill_chunks, 2);
  EXPECT_EQ(engine.last_forward().tokens, 22 + 22);
  engine.run_until_idle();
  EXPECT_EQ(engine.take(a).prompt_cached_tokens, 0);
  EXPECT_EQ(engine.take(b).prompt_cached_tokens, 128);
  EXPECT_EQ(engine.stats().prompt_tokens, 150 + 22);
  EXPECT_EQ(engine.kv_reserved(), 0);
}

TEST(PrefixCacheEngine, AdmissionReservesOnlyThePagesASessionNewlyTakes) {
  ByteCodec codec;
  cpu::CpuBackend be(session_model(session_specs()[2]));
  const SessionRequest probe = greedy_request(codec, 2, "test", kPrompt, 8);
  const int64_t need = Session::kv_tokens_needed(probe.options, probe.formatting, codec,
                                                 be.config(), static_cast<int64_t>(kPrompt.size()));
  for (bool cache : {true, false}) {
    SCOPED_TRACE(cache);
    EngineOptions eo;
    eo.prefix_cache = cache;
    eo.kv_tokens = 2 * need - 128;  // two sessions fit only when one shares two pages
    Engine engine(be, codec, eo);
    const SessionId a = engine.submit(greedy_request(codec, 2, "test", kPrompt, 8));
    engine.step();  // a's whole prompt (150 tokens in one chunk): its two full pages are cached
    EXPECT_EQ(engine.kv_reserved(), need);
    // b, the same request a step later, outlives a.
    const SessionId b = engine.submit(greedy_request(codec, 2, "test", kPrompt, 8));
    engine.step();
    if (!cache) {
      EXPECT_EQ(engine.active_sessions(), 1);  // b waits for a's memory
      EXPECT_EQ(engine.kv_reserved(), need);
      engine.run_until_idle();
      EXPECT_EQ(engine.take(b).prompt_cached_tokens, 0);
      continue;
    }
    EXPECT_EQ(engine.active_sessions(), 2);
    EXPECT_EQ(engine.kv_reserved(), need + need - 128);
    while (!engine.finished(a)) engine.step();
    // b holds a's two pages, which no reservation covers any more: they count on their own.
    ASSERT_FALSE(engine.finished(b));
    EXPECT_EQ(be.kv_unowned_tokens(), 128);
    EXPECT_EQ(engine.kv_reserved(), need - 128 + 128);
    engine.run_until_idle();
    EXPECT_EQ(engine.take(b).prompt_cached_tokens, 128);
    EXPECT_EQ(engine.kv_reserved(), 0);
    EXPECT_EQ(be.kv_used_tokens(), 0);
    EXPECT_EQ(be.table().idle_pages(), 2);  // cached for the next session
  }
}

}  // namespace
}  // namespace hogwild::testing
