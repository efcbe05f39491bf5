// The Engine (engine/engine.h): many sessions in one forward per step. Every session's logits
// equal the naive reference of that session alone (fp32), with mixed layouts and worker counts,
// sessions joining mid-prefill, leaving and being cancelled; a session's tokens do not depend on
// who else runs (CPU); admission by KV memory and the bounded queue; 1000 sessions with
// cancellations leave the pool empty; chunked prefill.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "cpu/cpu_backend.h"
#include "engine/engine.h"
#include "engine/plain.h"
#include "engine/warmup.h"
#include "hogwild/picker.h"
#include "tests/hogwild/engine_checker.h"
#include "tests/hogwild/session_checker.h"
#include "tests/hogwild/test_support.h"

namespace hogwild::testing {
namespace {

TEST(EngineVsReference, SessionsSharingForwardsMatchTheirReferenceAlone) {
  // qwen2 (bias, GQA), qwen3 (q/k norm, tied), qwen3_moe (experts grouped over every session)
  for (const test::TinySpec& spec :
       {session_specs()[1], session_specs()[2], moe_session_specs()[1]}) {
    SCOPED_TRACE(spec.name);
    cpu::CpuBackend be(session_model(spec), kSharingPoolTokens);
    expect_sessions_match_reference(be, be.weights(), 1e-4, 1e-4);
    EXPECT_EQ(be.cached_tokens(), 0);
  }
}

TEST(EngineVsReference, QuantizedModelSessionsMatchTheirReferenceAlone) {
  // A GPTQ act-order checkpoint and an FP8 one (make-model --quant), loaded and run on the CPU.
  for (QuantMethod m : {QuantMethod::gptq, QuantMethod::fp8}) {
    SCOPED_TRACE(quant_method_name(m));
    cpu::CpuBackend be(quantized_session_model(Arch::qwen3, m, m == QuantMethod::gptq ? 32 : 0,
                                               /*desc_act=*/m == QuantMethod::gptq));
    ASSERT_EQ(be.config().quantization_config.method, m);
    expect_sessions_match_reference(be, be.weights(), 1e-4, 1e-4);
    EXPECT_EQ(be.cached_tokens(), 0);
  }
}

// Tokens of every worker, in order, from the observer's stream.
struct TokenLog : SessionObserver {
  std::vector<std::vector<int32_t>> ids;
  explicit TokenLog(int n) : ids(n) {}
  void on_token(const TokenEvent& e) override { ids[e.worker].push_back(e.token); }
};

SessionRequest sampled_request(const ByteCodec& codec, int workers, Layout layout,
                               const std::string& prompt, SamplingParams sp, int64_t budget) {
  SessionRequest r;
  r.formatting = test_formatting(9);
  r.options.n_workers = workers;
  r.options.layout = layout;
  r.options.budget = budget;
  r.options.device_sampling = true;  // the one sampling contract (ForwardBatch::draw)
  r.options.stop_on_answer = false;
  r.prompt = codec.encode(prompt);
  r.sampling = sp;
  return r;
}

SamplingParams seeded(float temperature, uint64_t seed) {
  SamplingParams sp;
  sp.do_sample = true;
  sp.temperature = temperature;
  sp.top_k = 40;
  sp.top_p = 0.95f;
  sp.seed = seed;
  return sp;
}

// A greedy and a seeded session give the same tokens alone and beside three others (CPU).
void session_tokens_do_not_depend_on_the_other_sessions(const test::TinySpec& spec) {
  ByteCodec codec;
  const std::string q = "Q: what is 6 times 7?\n";
  // The sessions under test: greedy (3 workers, combined) and seeded sampling (2, interleaved).
  auto greedy = [&] {
    return sampled_request(codec, 3, Layout::combined, q, SamplingParams{}, 25);
  };
  auto sampled = [&] {
    return sampled_request(codec, 2, Layout::interleaved, q, seeded(1.5f, 11), 25);
  };
  std::vector<std::vector<std::vector<int32_t>>> alone;
  for (auto make :
       {std::function<SessionRequest()>(greedy), std::function<SessionRequest()>(sampled)}) {
    cpu::CpuBackend be(session_model(spec));
    Engine engine(be, codec);
    SessionRequest r = make();
    TokenLog log(r.options.n_workers);
    r.observer = &log;
    engine.submit(std::move(r));
    engine.run_until_idle();
    alone.push_back(log.ids);
  }
  ASSERT_GT(alone[0][0].size(), 20u);
  ASSERT_GT(alone[1][0].size(), 20u);
  // Beside three other sessions (other prompts, worker counts, layouts, seeds, forbidden texts),
  // the second one joining a few steps late.
  cpu::CpuBackend be(session_model(spec));
  Engine engine(be, codec);
  TokenLog g(3), s(2);
  SessionRequest rg = greedy(), rs = sampled();
  rg.observer = &g;
  rs.observer = &s;
  SessionRequest o1 =
      sampled_request(codec, 8, Layout::combined, "Q: name a colour.\n", seeded(0.9f, 5), 30);
  o1.formatting.forbidden.texts = {"e", "<t270>"};
  SessionRequest o2 = sampled_request(codec, 1, Layout::contiguous, "Hi\n", SamplingParams{}, 40);
  SessionRequest o3 =
      sampled_request(codec, 5, Layout::contiguous, "Q: count from one to ten in words, please.\n",
                      seeded(2.0f, 1), 18);
  engine.submit(std::move(o1));
  engine.submit(std::move(rg));
  engine.submit(std::move(o2));
  engine.step();
  engine.step();
  engine.submit(std::move(rs));
  engine.submit(std::move(o3));
  engine.run_until_idle();
  EXPECT_EQ(g.ids, alone[0]);
  EXPECT_EQ(s.ids, alone[1]);
}

TEST(Engine, SessionTokensDoNotDependOnTheOtherSessions) {
  for (const test::TinySpec& spec : {session_specs()[2], moe_session_specs()[0]}) {
    SCOPED_TRACE(spec.name);
    session_tokens_do_not_depend_on_the_other_sessions(spec);
  }
}

TEST(Engine, ChunkedPrefillGivesTheSameRun) {
  const test::TinySpec spec = session_specs()[1];
  ByteCodec codec;
  const std::string q = "Q: a long prompt, fed in chunks of a few tokens each, then decoded.\n";
  std::vector<std::vector<std::vector<int32_t>>> runs;
  for (int64_t chunk : {int64_t{4096}, int64_t{5}, int64_t{13}}) {
    cpu::CpuBackend be(session_model(spec));
    EngineOptions eo;
    eo.prefill_chunk = chunk;
    Engine engine(be, codec, eo);
    SessionRequest r = sampled_request(codec, 2, Layout::combined, q, seeded(1.0f, 3), 20);
    TokenLog log(2);
    r.observer = &log;
    const SessionId id = engine.submit(std::move(r));
    int steps = 0;
    while (!engine.idle()) {
      engine.step();
      ++steps;
    }
    const SessionResult res = engine.take(id);
    EXPECT_EQ(res.prompt_tokens, static_cast<int64_t>(codec.encode(q).size()));
    // 20 serial steps + the finisher's forwards + the prefill's chunks.
    const int64_t chunks = (res.prompt_tokens + chunk - 1) / chunk;
    EXPECT_GE(steps, 20 + chunks + 1);
    runs.push_back(log.ids);
  }
  EXPECT_EQ(runs[1], runs[0]);
  EXPECT_EQ(runs[2], runs[0]);
}

TEST(Engine, AdmissionWaitsForKvMemoryAndRefusesWhatCannotFit) {
  const test::TinySpec spec = session_specs()[2];
  ByteCodec codec;
  auto request = [&](int workers, int64_t budget) {
    return sampled_request(codec, workers, Layout::combined, "Q: 1+1?\n", SamplingParams{}, budget);
  };
  SessionRequest probe = request(2, 10);
  const int64_t need =
      Session::kv_tokens_needed(probe.options, probe.formatting, codec, session_model(spec).config,
                                static_cast<int64_t>(probe.prompt.size()));
  // Room for one such session, not two (the capacity is whole 64-token pages).
  cpu::CpuBackend be(session_model(spec), need + need / 2);
  const int64_t capacity = be.kv_capacity_tokens();
  ASSERT_EQ(capacity, (need + need / 2 + 63) / 64 * 64);
  ASSERT_LT(capacity, 2 * need);
  EngineOptions eo;
  eo.max_queue = 2;
  Engine engine(be, codec, eo);
  const SessionId a = engine.submit(request(2, 10));
  const SessionId b = engine.submit(request(2, 10));
  engine.step();
  EXPECT_EQ(engine.active_sessions(), 1);
  EXPECT_EQ(engine.queued_sessions(), 1);
  EXPECT_EQ(engine.kv_reserved(), need);
  // A session that can never fit is refused at once, with the sizes.
  try {
    engine.submit(request(8, 100000));
    FAIL() << "a session larger than the cache was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("but the cache holds " + std::to_string(capacity)),
              std::string::npos)
        << e.what();
  }
  engine.submit(request(1, 3));                       // queue: b and this one
  EXPECT_THROW(engine.submit(request(1, 3)), Error);  // the queue holds 2
  // b starts only once a has finished and freed its blocks.
  bool a_done = false;
  while (!engine.idle()) {
    for (const SessionEvent& e : engine.step()) {
      if (e.id == a && e.report.finished) a_done = true;
      if (e.id == b) {
        EXPECT_TRUE(a_done) << "b ran before a freed its memory";
      }
    }
  }
  EXPECT_EQ(engine.take(a).stop_reason, StopReason::budget);
  EXPECT_EQ(engine.take(b).stop_reason, StopReason::budget);
  EXPECT_EQ(be.live_blocks(), 0);
  EXPECT_EQ(engine.kv_reserved(), 0);
}

// A session that stops at max_tokens_per_worker (a server's plain completion with max_tokens)
// reserves what those tokens can fill, not a whole context: 16 such sessions fit a pool that
// holds two context-long ones, all 16 are admitted and prefilled in the first forward, and the
// cache never holds more than the reservations.
TEST(Engine, MaxTokensBoundTheKvReservationSoEveryFittingSessionRuns) {
  const test::TinySpec spec = session_specs()[2];
  const ModelWeights weights = session_model(spec);
  ByteCodec codec;
  constexpr int64_t kMaxTokens = 4;
  auto request = [&](int i) {
    SessionRequest r = sampled_request(codec, 1, Layout::combined, fmt::format("Q{:02}: 1+1?\n", i),
                                       SamplingParams{}, /*budget=*/0);
    r.options.max_tokens_per_worker = kMaxTokens;
    return r;
  };
  const SessionRequest probe = request(10);
  const int64_t prompt = static_cast<int64_t>(probe.prompt.size());
  const int64_t finisher = probe.formatting.finisher.max_tokens;
  const int64_t need =
      Session::kv_tokens_needed(probe.options, probe.formatting, codec, weights.config, prompt);
  // By hand (kv_budget.h): the view holds the prompt and 4 serial steps, each with a token and a
  // step opening ("**Alice [5]:** ", 15 tokens of the byte codec; no collaboration question: 5
  // tokens at most are generated, one every 9 would be due), then the finisher, one page for each
  // of 3 + 4 live blocks and 256 constant tokens.
  ASSERT_EQ(probe.formatting.step_start(0, kMaxTokens + 1, false), "**Alice [5]:** ");
  EXPECT_EQ(need, prompt + kMaxTokens * (1 + 15) + finisher + 64 * 7 + 256);
  const int64_t context_long = 8192 + finisher + 64 * 7 + 256;  // as without max_tokens
  cpu::CpuBackend be(session_model(spec), 2 * context_long);
  ASSERT_LT(be.kv_capacity_tokens(), 3 * context_long);
  constexpr int kSessions = 16;
  ASSERT_LE(kSessions * need, be.kv_capacity_tokens());
  EngineOptions eo;
  eo.max_sessions = kSessions;
  Engine engine(be, codec, eo);
  std::vector<SessionId> ids;
  for (int i = 0; i < kSessions; ++i) ids.push_back(engine.submit(request(i)));
  const std::vector<SessionEvent> first = engine.step();
  EXPECT_EQ(engine.active_sessions(), kSessions);
  EXPECT_EQ(engine.queued_sessions(), 0);
  EXPECT_EQ(engine.kv_reserved(), kSessions * need);
  ASSERT_EQ(first.size(), static_cast<size_t>(kSessions));  // every prompt in the first forward
  for (const SessionEvent& e : first) EXPECT_EQ(e.report.phase, StepReport::Phase::prefill);
  while (!engine.idle()) {
    engine.step();
    EXPECT_LE(be.kv_used_tokens(), engine.kv_reserved());
  }
  for (SessionId id : ids) {
    const SessionResult r = engine.take(id);
    ASSERT_EQ(r.tokens_per_worker.size(), 1u);
    EXPECT_LE(r.tokens_per_worker[0], kMaxTokens);
  }
  EXPECT_EQ(be.live_blocks(), 0);
  EXPECT_EQ(engine.kv_reserved(), 0);
}

TEST(Engine, ThousandSessionsWithCancellationsLeaveThePoolEmpty) {
  const test::TinySpec spec = session_specs()[2];
  ByteCodec codec;
  cpu::CpuBackend be(session_model(spec));
  EngineOptions eo;
  eo.max_sessions = 48;
  eo.prefill_chunk = 8;
  Engine engine(be, codec, eo);
  std::mt19937 rng(5);
  std::vector<SessionId> live;
  int submitted = 0, cancelled = 0, finished = 0;
  std::map<StopReason, int> reasons;
  while (submitted < 1000 || !engine.idle()) {
    while (submitted < 1000 && engine.queued_sessions() < 16) {
      const int w = 1 + static_cast<int>(rng() % 3);
      const Layout l = static_cast<Layout>(rng() % 3);
      SessionRequest r = sampled_request(codec, w, l, fmt::format("Q{}?\n", submitted),
                                         seeded(1.0f, submitted), 2 + rng() % 4);
      if (rng() % 4 == 0) r.options.snapshots = {1};
      live.push_back(engine.submit(std::move(r)));
      ++submitted;
    }
    if (!live.empty() && rng() % 3 == 0) {  // cancel a random session, queued, running or done
      const size_t k = rng() % live.size();
      if (!engine.finished(live[k])) {
        engine.cancel(live[k]);
        ++cancelled;
      }
    }
    engine.step();
    for (size_t k = 0; k < live.size();) {
      if (engine.finished(live[k])) {
        ++reasons[engine.take(live[k]).stop_reason];
        ++finished;
        live[k] = live.back();
        live.pop_back();
      } else {
        ++k;
      }
    }
  }
  EXPECT_EQ(finished, 1000);
  EXPECT_EQ(reasons[StopReason::cancelled], cancelled);
  EXPECT_GT(cancelled, 50);
  EXPECT_GT(reasons[StopReason::budget] + reasons[StopReason::answer] + reasons[StopReason::eos],
            500);
  EXPECT_EQ(be.live_blocks(), 0);
  EXPECT_EQ(be.cached_tokens(), 0);
  EXPECT_EQ(engine.kv_reserved(), 0);
  EXPECT_GT(engine.stats().steps, 0);
}

// Records the views and fed tokens of every forward, and the notes.
struct ViewLog : SessionObserver {
  std::vector<ForwardRecord> forwards;
  std::vector<std::tuple<std::string, std::string, int64_t>> notes;
  void on_forward(const ForwardRecord& r) override {
    forwards.push_back(r);
    forwards.back().logits = nullptr;
  }
  void on_note(const std::string& a, const std::string& t, int64_t s) override {
    notes.emplace_back(a, t, s);
  }
};

TEST(Engine, NoteEntersTheHistoryAndEveryWorkerSeesItFromTheNextStep) {
  const test::TinySpec spec = session_specs()[2];
  ByteCodec codec;
  cpu::CpuBackend be(session_model(spec));
  Engine engine(be, codec);
  Planned p{Layout::combined, 3, 20, "Task: add 2 and 3, then double it.\n\n"};
  SessionRequest r = scripted_request(p, codec);
  const Formatting f = r.formatting;
  ViewLog log;
  r.observer = &log;
  const SessionId id = engine.submit(std::move(r));
  while (log.forwards.empty() || log.forwards.back().serial_step < 6) engine.step();
  engine.add_note(id, "Dana", "Check the sum twice.");
  engine.step();  // serial step 7 feeds the note
  engine.run_until_idle();
  const SessionResult res = engine.take(id);
  ASSERT_EQ(log.notes.size(), 1u);
  const std::string text = f.note_text("Dana", "Check the sum twice.");
  EXPECT_EQ(text, "**Note from Dana:** Check the sum twice.\n\n");
  EXPECT_EQ(std::get<1>(log.notes[0]), text);
  EXPECT_EQ(std::get<2>(log.notes[0]), 7);
  // The forward of serial step 7 fed the note into a block no worker reads yet, by a writer whose
  // view is the history (+ that forward's closing steps) and the note block.
  const ForwardRecord* f7 = nullptr;
  for (const ForwardRecord& fr : log.forwards)
    if (fr.serial_step == 7) f7 = &fr;
  ASSERT_NE(f7, nullptr);
  std::vector<int32_t> note_ids;
  BlockId note_block = -1;
  for (const FedToken& t : f7->tokens)
    if (t.role == FeedRole::note) {
      note_ids.push_back(t.token);
      note_block = t.block;
      EXPECT_EQ(t.worker, -1);
    }
  EXPECT_EQ(note_ids, codec.encode(text));
  ASSERT_EQ(f7->views.size(), 4u);                        // three workers + the note's writer
  EXPECT_EQ(f7->views[3].front(), f7->views[0].front());  // it reads the history
  EXPECT_EQ(f7->views[3].back(), note_block);
  for (int w = 0; w < 3; ++w)
    EXPECT_EQ(std::count(f7->views[w].begin(), f7->views[w].end(), note_block), 0);
  // From serial step 8 on the note is in the history every worker reads: the history text holds
  // it right after the steps that closed in step 7.
  const size_t at = res.history_text.find(text);
  ASSERT_NE(at, std::string::npos) << res.history_text;
  EXPECT_EQ(res.history_text.find(text, at + 1), std::string::npos);
  EXPECT_EQ(res.stop_reason, StopReason::budget);
  EXPECT_EQ(be.live_blocks(), 0);
  EXPECT_THROW(engine.add_note(id, "Dana", "too late"), Error);
}

// The server's warm-up (engine/warmup.h): rounds of 1..4 plain sessions at once, each a prefill
// forward and two decode forwards (3 tokens: 1 from the prompt's row, 2 fed back), 10 sessions in
// 12 forwards; afterwards the cache holds nothing and a generation is the same as on a cold
// backend. The CPU backend has no first-run cost, so a server skips it there.
TEST(Warmup, RunsEachBatchSizeOnceAndLeavesTheCacheEmpty) {
  const test::TinySpec spec = session_specs()[0];
  ByteCodec codec;
  auto generate = [&](Backend& be) {
    PlainRequest p;
    p.prompt = codec.encode("Q: what is 6 times 7?\n");
    p.max_tokens = 12;
    return generate_plain(be, codec, std::move(p)).generated;
  };
  cpu::CpuBackend cold(session_model(spec));
  EXPECT_EQ(cold.warmup_tokens(), 0);
  const std::vector<int32_t> expected = generate(cold);
  ASSERT_EQ(expected.size(), 12u);

  cpu::CpuBackend be(session_model(spec));
  const WarmupReport w = warm_up(be, codec, codec.encode("Hi"), 4);
  EXPECT_EQ(w.sessions, 10);
  EXPECT_EQ(w.forwards, 12);
  EXPECT_GT(w.seconds, 0.0);
  EXPECT_EQ(be.live_blocks(), 0);
  EXPECT_EQ(be.kv_used_tokens(), 0);
  EXPECT_EQ(generate(be), expected);

  EXPECT_THROW(warm_up(be, codec, codec.encode("Hi"), 0), Error);
  EXPECT_THROW(warm_up(be, codec, codec.encode("Hi"), 2, 1), Error);
  EXPECT_THROW(warm_up(be, codec, {}, 2), Error);  // make_plain_request: an empty prompt
}

}  // namespace
}  // namespace hogwild::testing
