// The KV budget's second policy, summarise-and-drop (hogwild/forgetting.h, docs/ARCHITECTURE.md
// "Bounded shared memory"): the trigger and the summarised ranges against hand-computed cases, the
// request checks' sentences, the formatting's summary keys, and whole sessions on the CPU backend:
// a scripted run whose summaries, dropped ranges and kept tokens are computed by hand below; a
// budget the run never reaches changes no bit of any logits row; and with summaries every forward
// still matches the naive reference told to forget the same tokens, each summary's dropped
// ranges being exactly the steps between the prompt and it, written by the lowest-index worker
// whose step ended once the summary was due.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>

#include "cpu/cpu_backend.h"
#include "hogwild/forgetting.h"
#include "hogwild/request_check.h"
#include "hogwild/transcript.h"
#include "tests/hogwild/session_checker.h"
#include "tests/hogwild/test_support.h"

namespace hogwild::testing {
namespace {

using Ranges = std::vector<TokenRange>;
using ojson = nlohmann::ordered_json;

const char* const kPrompt = "Task: add 2 and 3, then double it.\n\n";  // 36 bytes = 36 tokens

TEST(KvSummaryChoice, TriggerLeavesRoomForTheSummaryAndTheOthersSteps) {
  // 4 workers, summaries of 64 tokens: 1000 - 4 * 64.
  EXPECT_EQ(summary_trigger(1000, 4, 64), 744);
  EXPECT_EQ(summary_trigger(1000, 1, 64), 936);
  EXPECT_EQ(summary_trigger(100, 4, 64), 0);  // never below 0
}

TEST(KvSummaryChoice, SummarisedRangesAreBetweenThePromptAndTheSummaryLessNotesAndGaps) {
  // Prompt [0, 10), summary from 50; a note at [20, 25) stays, [30, 34) is already forgotten.
  EXPECT_EQ(summarised_ranges(10, 50, {{20, 25}}, {{30, 34}}),
            (Ranges{{10, 20}, {25, 30}, {34, 50}}));
  EXPECT_EQ(summarised_ranges(10, 50, {}, {}), (Ranges{{10, 50}}));
  // A second summary at 80, the first one's drop [10, 50) forgotten: the first summary and what
  // followed it go.
  EXPECT_EQ(summarised_ranges(10, 80, {}, {{10, 50}}), (Ranges{{50, 80}}));
  // Nothing between the prompt and the summary.
  EXPECT_TRUE(summarised_ranges(10, 10, {}, {}).empty());
  EXPECT_TRUE(summarised_ranges(10, 30, {}, {{10, 30}}).empty());
}

TEST(KvSummaryChoice, PolicyNames) {
  EXPECT_EQ(parse_kv_policy("evict"), KvPolicy::evict);
  EXPECT_EQ(parse_kv_policy("summarise"), KvPolicy::summarise);
  EXPECT_EQ(parse_kv_policy("summarize"), KvPolicy::summarise);
  EXPECT_EQ(parse_kv_policy("drop"), std::nullopt);
  EXPECT_EQ(kv_policy_name(KvPolicy::summarise), "summarise");
  EXPECT_EQ(kv_policy_name(KvPolicy::evict), "evict");
}

// Runs f; the sentence and the field of the RequestError it throws.
template <typename F>
std::pair<RequestField, std::string> refusal(F&& f) {
  try {
    f();
  } catch (const RequestError& e) {
    return {e.field(), e.what()};
  }
  return {RequestField::workers, "no error"};
}

TEST(KvSummaryRequest, BadValuesAreRefusedWithTheirSentence) {
  EXPECT_EQ(refusal([] { check_kv_policy("drop", 512, 0); }),
            std::make_pair(RequestField::kv_policy,
                           std::string("kv_policy is 'drop'; use evict (forget the least attended "
                                       "chunks of the history) or summarise (a worker writes a "
                                       "summary step and the steps it sums up are forgotten)")));
  EXPECT_EQ(refusal([] { check_kv_policy("summarise", 0, 0); }),
            std::make_pair(RequestField::kv_policy,
                           std::string("kv_policy is summarise, but there is no kv_budget: the "
                                       "policy says what happens at the budget; give a "
                                       "kv_budget, or drop kv_policy")));
  EXPECT_EQ(refusal([] { check_kv_policy("summarise", 512, 16); }),
            std::make_pair(RequestField::kv_chunk,
                           std::string("kv_chunk is 16, but kv_policy summarise drops whole "
                                       "steps, not chunks; drop kv_chunk, or use kv_policy "
                                       "evict")));
  EXPECT_EQ(refusal([] { check_kv_summary_fits(400, 100, 4, 64, 90); }),
            std::make_pair(
                RequestField::kv_budget,
                std::string("kv_budget is 400, but with kv_policy summarise the history holds "
                            "the prompt (100 tokens) and a summary step of up to 90 tokens, and a "
                            "summary starts 4 x 64 tokens before the budget (4 workers write "
                            "while it is written); give at least 446 tokens, a shorter "
                            "summary.max_tokens in the formatting, or 0 for no budget")));
  // Accepted: the names, evict or nothing without a budget, a budget that fits.
  EXPECT_EQ(check_kv_policy("", 0, 0), KvPolicy::evict);
  EXPECT_EQ(check_kv_policy("evict", 0, 0), KvPolicy::evict);
  EXPECT_EQ(check_kv_policy("evict", 512, 16), KvPolicy::evict);
  EXPECT_EQ(check_kv_policy("summarise", 512, 0), KvPolicy::summarise);
  EXPECT_EQ(refusal([] { check_kv_summary_fits(446, 100, 4, 64, 90); }).second, "no error");
  EXPECT_EQ(refusal([] { check_kv_summary_fits(0, 100, 4, 64, 90); }).second, "no error");
  // The longest summary step of the test formatting, one token a byte: "**Carol [1000]:** Sum: "
  // (23), 6 tokens, "\n\n" (2).
  const Formatting f = test_formatting();
  auto bytes = [](const std::string& t) { return static_cast<int64_t>(t.size()); };
  EXPECT_EQ(summary_step_tokens(f, 3, bytes), 31);
  EXPECT_EQ(summary_step_tokens(f, 2, bytes), 31);  // "**Alice [1000]:** Sum: " as long
  EXPECT_EQ(summary_step_tokens(f, 4, bytes), 31);
  // check_kv_fits: the policy's own rule (evict: prompt + recent 128).
  ForgetPolicy kv{.budget = 79, .recent = 128};
  EXPECT_EQ(refusal([&] { check_kv_fits(kv, 36, 2, f, bytes); }).first, RequestField::kv_budget);
  kv.policy = KvPolicy::summarise;  // 36 + 31 + 2 * 6 = 79
  EXPECT_EQ(refusal([&] { check_kv_fits(kv, 36, 2, f, bytes); }).second, "no error");
  EXPECT_EQ(refusal([&] { check_kv_fits(kv, 36, 3, f, bytes); }).first, RequestField::kv_budget);
}

TEST(KvSummaryFormatting, TheSummaryKeysParseRenderAndAreChecked) {
  const Formatting base = builtin_formatting("qwen3-math");
  EXPECT_FALSE(base.summary.prompt.empty());
  EXPECT_EQ(base.summary.max_tokens, 128);
  EXPECT_EQ(parse_formatting(base.to_json()).to_json(), base.to_json());
  const ojson over = {{"base", "qwen3-math"},
                      {"summary", {{"prompt", "({name} sums up) "}, {"max_tokens", 40}}}};
  const Formatting f = parse_formatting(over);
  EXPECT_EQ(f.summary.max_tokens, 40);
  EXPECT_EQ(f.summary_start(1, 3), "**Bob [3]:** (Bob sums up) ");
  try {
    parse_formatting(ojson{{"base", "qwen3-math"}, {"summary", {{"prompt", "step {step}"}}}});
    ADD_FAILURE() << "{step} in summary.prompt was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("key 'summary.prompt' uses the placeholder {step}"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(parse_formatting(ojson{{"base", "qwen3-math"}, {"summary", {{"max_tokens", 0}}}}),
               Error);
}

// What a run's observers saw: each step's opening and the serial step it opened in, the serial
// step of each step end, every forgetting.
struct Recorder : SessionObserver {
  int64_t serial = 0;
  std::map<std::pair<int, int>, std::string> openings;  // (worker, step) -> opening bytes
  std::map<std::pair<int, int>, int64_t> opened_at;     // (worker, step) -> serial step
  std::map<int64_t, std::set<int>> ended;               // serial step -> workers whose step ended
  std::map<std::pair<int, int>, int64_t> fed;           // (worker, step) -> tokens fed
  std::vector<std::pair<int, int>> history;             // steps in the order they joined
  std::vector<ForgetEvent> forgets;
  // After each serial step's promotions and forgetting: history tokens joined and forgotten.
  std::map<int64_t, int64_t> joined, forgotten;
  void on_forward(const ForwardRecord& r) override {
    serial = r.serial_step;
    for (const FedToken& t : r.tokens)
      if (t.worker >= 0) fed[{t.worker, t.step}] += 1;
    history.insert(history.end(), r.closed.begin(), r.closed.end());
    if (r.kind != ForwardKind::step) return;
    joined[serial] = joined.empty() ? 0 : joined.rbegin()->second;
    forgotten[serial] = forgotten.empty() ? 0 : forgotten.rbegin()->second;
    for (const auto& s : r.closed) joined[serial] += fed.at(s);
  }
  void on_step_start(int w, int k, const std::string& bytes, bool) override {
    openings[{w, k}] = bytes;
    opened_at[{w, k}] = serial;
  }
  void on_step_end(int w, int, const std::string&, const std::optional<std::string>&) override {
    ended[serial].insert(w);
  }
  void on_forget(const ForgetEvent& e) override {
    forgets.push_back(e);
    for (const auto& [b, end] : e.ranges) forgotten[e.serial_step] += end - b;
  }
  // History index where step `key` begins (the prompt, then the steps in the order they joined).
  int64_t offset_of(std::pair<int, int> key, int64_t prompt) const {
    int64_t at = prompt;
    for (const auto& s : history) {
      if (s == key) return at;
      at += fed.at(s);
    }
    return -1;
  }
};

// One worker, collaboration checks off, summaries of at most 6 tokens after "Sum: ", a budget of
// 86 tokens: the summary is due once the history's tokens still read pass 86 - 1 * 6 = 80.
// Alice's steps (worker_script(0), each after "**Alice [k]:** ", 15 tokens) hold 18, 23, 25 and
// 20 tokens: after step 3 joins, the history has 36 + 18 + 23 + 25 = 102 tokens > 80 (after step
// 2: 77). Step 4 is open by then, so step 5 is the summary: "**Alice [5]:** Sum: " (20 tokens)
// and 6 tokens of sentence 4 (7 letters long, no step end) closed by "\n\n": 28 tokens at history
// [122, 150). When it joins, [36, 122) (steps 1-4) is forgotten: 36 + 28 = 64 tokens still read.
// Step 6 is sentence 4's last letter and ".\n\n": 15 + 4 = 19, so 83 > 80 after it joins and the
// next summary is due; step 7 (15 + 3 letters + "!" + "\n\n" = 20 tokens) is open, so step 8 is
// the next summary (20 + 6 letters of sentence 6 + "\n\n" = 28 tokens at [189, 217)); it drops
// [122, 189): the first summary, steps 6 and 7. Again 64 still read.
TEST(KvSummarySession, HandComputedSummariesAndDrops) {
  cpu::CpuBackend be(session_model(session_specs().front()));
  ByteCodec codec;
  Formatting f = test_formatting(0);
  ScriptPicker picker({worker_script(0)});
  SessionOptions opt;
  opt.n_workers = 1;
  opt.budget = 80;
  opt.collab_every = 0;
  opt.kv = {.budget = 86, .policy = KvPolicy::summarise};
  Session s(be, codec, f, opt, picker);
  Recorder rec;
  s.set_observer(&rec);
  const SessionResult r = s.run(codec.encode(kPrompt));
  EXPECT_EQ(r.stop_reason, StopReason::budget);
  ASSERT_GE(r.forgotten.size(), 2u);
  EXPECT_EQ(rec.openings.at({0, 5}), "**Alice [5]:** Sum: ");
  EXPECT_EQ(rec.openings.at({0, 8}), "**Alice [8]:** Sum: ");
  EXPECT_EQ(rec.openings.at({0, 4}), "**Alice [4]:** ");
  EXPECT_EQ(rec.openings.at({0, 6}), "**Alice [6]:** ");
  const ForgetEvent& a = r.forgotten[0];
  EXPECT_EQ(a.summary_worker, 0);
  EXPECT_EQ(a.summary_step, 5);
  EXPECT_EQ(a.summary, (TokenRange{122, 150}));
  EXPECT_EQ(a.ranges, (Ranges{{36, 122}}));
  EXPECT_EQ(a.history_len, 150);
  EXPECT_EQ(a.kept, 64);
  const ForgetEvent& b = r.forgotten[1];
  EXPECT_EQ(b.summary_step, 8);
  EXPECT_EQ(b.summary, (TokenRange{189, 217}));
  EXPECT_EQ(b.ranges, (Ranges{{122, 189}}));
  EXPECT_EQ(b.kept, 64);
  ASSERT_EQ(b.texts.size(), 1u);
  EXPECT_EQ(b.texts[0].rfind("**Alice [5]:** Sum: ", 0), 0u) << b.texts[0];
  // Every forgetting is a summary's, and the history stays within the budget after each.
  for (const ForgetEvent& e : r.forgotten) {
    EXPECT_GE(e.summary_worker, 0);
    EXPECT_LE(e.kept, 86);
  }
  // One summary may still be unfinished at the end of the run.
  EXPECT_GE(r.summaries_started, static_cast<int>(r.forgotten.size()));
  EXPECT_LE(r.summaries_started, static_cast<int>(r.forgotten.size()) + 1);
  // The gaps are the drops, joined: from the prompt's end on.
  ASSERT_EQ(s.history_gaps().size(), 1u);
  EXPECT_EQ(s.history_gaps().front().first, 36);
}

// Every logits row of a run, as bits.
struct LogitsLog : SessionObserver {
  std::vector<std::vector<float>> rows;
  void on_forward(const ForwardRecord& r) override {
    if (r.logits) rows.push_back(*r.logits);
  }
};

// A budget the history never passes: no summary is started, nothing is forgotten, and every
// logits row is bit for bit the run's without a budget.
TEST(KvSummarySession, BudgetAboveTheRunChangesNoBit) {
  const auto spec = session_specs().front();
  auto run = [&](int64_t budget, LogitsLog& log) {
    cpu::CpuBackend be(session_model(spec));
    ByteCodec codec;
    Formatting f = test_formatting(7);
    std::vector<std::vector<int32_t>> scripts;
    for (int k = 0; k < 3; ++k) scripts.push_back(worker_script(k));
    ScriptPicker picker(scripts);
    SessionOptions opt;
    opt.n_workers = 3;
    opt.budget = 30;
    opt.kv = {.budget = budget, .policy = KvPolicy::summarise};
    Session s(be, codec, f, opt, picker);
    s.set_observer(&log);
    return s.run(codec.encode(kPrompt));
  };
  LogitsLog plain, budgeted;
  const SessionResult a = run(0, plain), b = run(100000, budgeted);
  EXPECT_EQ(a.history_text, b.history_text);
  EXPECT_EQ(a.unfinished, b.unfinished);
  EXPECT_EQ(a.tokens_per_worker, b.tokens_per_worker);
  EXPECT_TRUE(b.forgotten.empty());
  EXPECT_EQ(b.summaries_started, 0);
  ASSERT_EQ(plain.rows.size(), budgeted.rows.size());
  ASSERT_GT(plain.rows.size(), 30u);
  for (size_t i = 0; i < plain.rows.size(); ++i)
    EXPECT_EQ(std::memcmp(plain.rows[i].data(), budgeted.rows[i].data(),
                          plain.rows[i].size() * sizeof(float)),
              0)
        << "row " << i;
}

using Param = std::tuple<test::TinySpec, Layout, int>;
class KvSummaryVsReference : public ::testing::TestWithParam<Param> {};

// Summaries in a small budget (16 tokens a worker more than the check asks for), 60 serial
// steps: every forward's
// logits match the naive reference that forgets the same history tokens (1e-4), and each
// summary drops exactly the steps between the prompt and it (the history rebuilt from the
// forwards' closed steps and fed tokens), after it was started by the lowest-index worker whose
// step ended in the serial step it opened in: the first serial step with a step end once the
// history passed the trigger.
TEST_P(KvSummaryVsReference, ReplayHoldsAndTheDropsAreTheSummarisedSteps) {
  auto [spec, layout, n] = GetParam();
  cpu::CpuBackend be(session_model(spec));
  ByteCodec codec;
  Formatting f = test_formatting(7);
  std::vector<std::vector<int32_t>> scripts;
  for (int k = 0; k < n; ++k) scripts.push_back(worker_script(k));
  ScriptPicker picker(scripts);
  const std::vector<int32_t> prompt = codec.encode(kPrompt);
  const int64_t head = static_cast<int64_t>(prompt.size());
  SessionOptions opt;
  opt.n_workers = n;
  opt.layout = layout;
  opt.budget = 60;
  const int64_t step = summary_step_tokens(
      f, n, [](const std::string& t) { return static_cast<int64_t>(t.size()); });
  const int64_t budget = head + step + n * f.summary.max_tokens + 16 * n;
  opt.kv = {.budget = budget, .policy = KvPolicy::summarise};
  Session s(be, codec, f, opt, picker);
  Checker check(be.weights(), be, f, layout, n, prompt);
  Recorder rec;
  MultiObserver both;
  both.add(&check);
  both.add(&rec);
  s.set_observer(&both);
  const SessionResult r = s.run(prompt);
  check.finish();
  EXPECT_EQ(r.serial_steps, 60);
  EXPECT_EQ(check.forwards, 60);
  EXPECT_LE(check.worst, 1e-4);
  EXPECT_LE(check.promotion().worst_key, 1e-4);
  EXPECT_EQ(check.scored_forwards, 0);  // summarise measures no attention
  ASSERT_FALSE(r.forgotten.empty());
  EXPECT_EQ(check.forgotten, r.forgotten_tokens);
  Ranges gaps;
  int64_t last_summary_end = head;
  int summarised = 0, capped = 0;
  int64_t last_join = 1;  // serial step of the last summary's drop
  const int64_t trigger = summary_trigger(budget, n, f.summary.max_tokens);
  for (const ForgetEvent& e : r.forgotten) {
    if (e.summary_worker < 0) {
      // The memory cap (the toy's steps are mostly openings, so the history grows faster than
      // the room left for a summary): whole pages after the last summary, which stays.
      ++capped;
      for (const auto& [b, end] : e.ranges) {
        EXPECT_GE(b, last_summary_end);
        EXPECT_EQ(b % 64, 0);
        EXPECT_EQ(end % 64, 0);
      }
      for (const auto& g : e.ranges) gaps.push_back(g);
      gaps = merge_ranges(gaps);
      continue;
    }
    ++summarised;
    const std::pair<int, int> key{e.summary_worker, e.summary_step};
    EXPECT_EQ(rec.openings.at(key),
              f.render_step_prefix(e.summary_worker, e.summary_step) + "Sum: ");
    const int64_t at = rec.offset_of(key, head);
    EXPECT_EQ(e.summary, (TokenRange{at, at + rec.fed.at(key)}));
    EXPECT_EQ(e.ranges, outside_ranges({{head, at}}, gaps));
    for (const auto& g : e.ranges) gaps.push_back(g);
    gaps = merge_ranges(gaps);
    last_summary_end = e.summary.second;
    // Read after the drop: the prompt and the summary (it joins after the steps that end with
    // it), within the budget.
    EXPECT_EQ(e.kept, head + (e.summary.second - e.summary.first));
    EXPECT_EQ(e.history_len, e.summary.second);
    EXPECT_LE(e.kept, budget);
    // Its writer: the lowest-index worker whose step ended in the serial step it opened in.
    const int64_t opened = rec.opened_at.at(key);
    ASSERT_FALSE(rec.ended[opened].empty());
    EXPECT_EQ(*rec.ended[opened].begin(), e.summary_worker);
    // It opened at the first step end at or after the first serial step since the last drop
    // whose history (prompt, joined, less forgotten) passed the trigger.
    int64_t due = -1;
    for (const auto& [t, j] : rec.joined)
      if (t >= last_join && head + j - rec.forgotten.at(t) > trigger) {
        due = t;
        break;
      }
    ASSERT_GE(due, 0);
    int64_t first_end = -1;
    for (const auto& [t, ws] : rec.ended)
      if (t >= due && !ws.empty()) {
        first_end = t;
        break;
      }
    EXPECT_EQ(opened, first_end);
    last_join = e.serial_step;
  }
  EXPECT_EQ(gaps, s.history_gaps());
  EXPECT_GT(summarised, 0);
  if (n < 4) {
    EXPECT_EQ(capped, 0);
  }
  EXPECT_GT(trigger, head);
  EXPECT_GE(r.summaries_started, summarised);  // the last one may be unfinished
  EXPECT_LE(r.summaries_started, summarised + 1);
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  auto& [spec, layout, n] = info.param;
  return spec.name + "_" + layout_name(layout) + "_w" + std::to_string(n);
}

INSTANTIATE_TEST_SUITE_P(Archs, KvSummaryVsReference,
                         ::testing::Combine(::testing::ValuesIn(session_specs()),
                                            ::testing::Values(Layout::combined,
                                                              Layout::interleaved),
                                            ::testing::Values(1, 2, 4)),
                         param_name);

}  // namespace
}  // namespace hogwild::testing
