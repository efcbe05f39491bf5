// What a run writes, on scripted sessions over the toy byte codec: the view dump (who wrote each
// block, promoted and reused blocks by id, each block's text, the finisher's forwards), the
// transcript streamed as JSON lines while the run goes, the logits dump (one row per sampled
// token, the row it was drawn from), and RunFiles (partial transcript replaced by the whole one).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "core/io.h"
#include "cpu/cpu_backend.h"
#include "hogwild/request_check.h"
#include "hogwild/run_files.h"
#include "hogwild/transcript.h"
#include "hogwild/view_dump.h"
#include "tests/hogwild/test_support.h"

namespace hogwild::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const test::TinySpec& spec() {
  static test::TinySpec s = session_specs()[2];
  return s;
}

std::string tmp(const std::string& name) {
  return ::testing::TempDir() + "/hogwild_outputs_" + std::to_string(getpid()) + "_" + name;
}

std::vector<json> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<json> out;
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

std::vector<int32_t> prompt() { return ByteCodec().encode("Q: what is 6 times 7?\n"); }

// Two scripted workers in the combined layout: steps end and are promoted, block ids are
// reused for later steps, a snapshot and the final finisher run.
TEST(ViewDump, NamesWritersPromotionsReuseAndText) {
  cpu::CpuBackend be(session_model(spec()));
  ByteCodec codec;
  Formatting f = test_formatting(0);
  ScriptPicker picker({worker_script(0), worker_script(1)});
  SessionOptions opt;
  opt.n_workers = 2;
  opt.budget = 24;
  opt.snapshots = {10};
  Session s(be, codec, f, opt, picker);
  const std::string path = tmp("views.jsonl");
  {
    OutputFile out(path, "--dump-views");
    ViewDumper d(out, codec);
    d.attach(&s);
    s.set_observer(&d);
    s.run(prompt());
    out.close();
  }
  const std::vector<json> lines = read_lines(path);
  ASSERT_GT(lines.size(), 25u);
  // Prefill: the prompt's writer, then one pseudo-writer per constant text, each constant block
  // named by its role and the workers that read it.
  const json& pre = lines[0];
  EXPECT_EQ(pre["kind"], "prefill");
  EXPECT_EQ(pre["writers"][0], (json{{"writes", "prompt"}, {"block", 0}}));
  std::set<std::string> roles;
  for (const auto& [id, b] : pre["blocks"].items()) {
    if (b["kind"] == "history") {
      EXPECT_EQ(b["text"], "Q: what is 6 times 7?\n" + f.layout.history_header);
      continue;
    }
    EXPECT_EQ(b["kind"], "constant") << id;
    EXPECT_EQ(b["written_in"], "prefill");
    EXPECT_EQ(b["writer_view"], (json{0, std::stoi(id)}));
    for (const json& r : b["roles"]) {
      roles.insert(r["role"].get<std::string>() + (r.contains("worker") ? r["worker"].dump() : ""));
      if (r["role"] == "others_header") {
        EXPECT_EQ(b["text"], f.others_header(r["worker"]));
      }
      if (r["role"] == "separator") {
        EXPECT_EQ(b["text"], f.layout.other_separator);
      }
    }
  }
  EXPECT_EQ(roles, (std::set<std::string>{"others_header0", "others_header1", "separator",
                                          "separator_own_header0", "separator_own_header1"}));
  // Serial steps: promoted blocks by id with the history offset they land at; a later forward
  // shows a block id that held an earlier step as "reuses".
  int promotions = 0, reuses = 0, finisher_lines = 0, snapshot_lines = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    const json& l = lines[i];
    if (l["kind"] == "finisher") {
      ++finisher_lines;
      snapshot_lines += l["snapshot"].get<bool>();
      const json& b = l["blocks"][l["writers"][0]["block"].dump()];
      EXPECT_EQ(b["kind"], "finisher");
      continue;
    }
    EXPECT_EQ(l["kind"], "step");
    const int64_t hist = l["blocks"]["0"]["ids"].size();
    int64_t at = hist;
    for (const json& p : l["promoted"]) {
      const json& b = l["blocks"][p["block"].dump()];
      EXPECT_EQ(p["history_offset"], at);
      EXPECT_EQ(b["kind"], "step");
      EXPECT_EQ(b["worker"], p["worker"]);
      EXPECT_EQ(b["step"], p["step"]);
      at += b["ids"].size();
      ++promotions;
    }
    for (const auto& [id, b] : l["blocks"].items()) {
      EXPECT_EQ(b["text"], codec.bytes(b["ids"].get<std::vector<int32_t>>())) << id;
      if (b.contains("reuses")) {
        ++reuses;
        EXPECT_GT(b["use"], 1);
        EXPECT_EQ(b["reuses"]["kind"], "step");
        EXPECT_TRUE(b["reuses"]["worker"] != b["worker"] || b["reuses"]["step"] != b["step"]);
      }
    }
  }
  EXPECT_GT(promotions, 2);
  EXPECT_GT(reuses, 0);
  EXPECT_GT(snapshot_lines, 0);
  EXPECT_GT(finisher_lines, snapshot_lines);  // the final finisher too
  // Each forward is dumped once: two forwards never feed the same tokens at the same positions.
  for (size_t i = 1; i < lines.size(); ++i) EXPECT_NE(lines[i], lines[i - 1]) << "line " << i;
  fs::remove(path);
}

// The transcript's events are written as they happen: after the run, the JSON lines hold the
// header, every step start/end and every token, in the order the recorder saw them.
TEST(Transcript, StreamsEveryEventAsAJsonLine) {
  cpu::CpuBackend be(session_model(spec()));
  ByteCodec codec;
  Formatting f = test_formatting(0);
  ScriptPicker picker({worker_script(0), worker_script(1)});
  SessionOptions opt;
  opt.n_workers = 2;
  opt.budget = 15;
  Session s(be, codec, f, opt, picker);
  const std::string path = tmp("events.jsonl");
  OutputFile out(path, "--json");
  TranscriptRecorder rec({"Alice", "Bob"});
  rec.stream_to(&out, {{"model", "toy"}});
  s.set_observer(&rec);
  const SessionResult res = s.run(prompt());
  out.close();
  const json doc = rec.to_json(res);
  const std::vector<json> lines = read_lines(path);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], (json{{"event", "run"}, {"model", "toy"}}));
  std::vector<json> tokens;
  int forwards = 0, starts = 0;
  for (const json& l : lines) {
    if (l["event"] == "token") {
      json t = l;
      t.erase("event");
      tokens.push_back(t);
    }
    forwards += l["event"] == "forward";
    starts += l["event"] == "step_start";
  }
  EXPECT_EQ(json(tokens), doc["tokens"]);
  EXPECT_EQ(forwards, 16);  // prefill + 15 serial steps
  EXPECT_EQ(starts, static_cast<int>(doc["steps"].size()));
  fs::remove(path);
}

// When an answer ends the run, the other workers' tokens of that last forward count (they were
// computed) and are reported; before, they were dropped from the stats.
TEST(Transcript, LastForwardTokensAreCounted) {
  cpu::CpuBackend be(session_model(spec()));
  ByteCodec codec;
  Formatting f = test_formatting(0);
  std::vector<int32_t> w0 = codec.encode("So \\boxed{42}");
  w0.push_back(kDotSep);
  ScriptPicker picker({w0, worker_script(1, 40), worker_script(2, 40)});
  SessionOptions opt;
  opt.n_workers = 3;
  opt.budget = 200;
  Session s(be, codec, f, opt, picker);
  TranscriptRecorder rec({"Alice", "Bob", "Carol"});
  s.set_observer(&rec);
  const SessionResult res = s.run(prompt());
  ASSERT_EQ(res.stop_reason, StopReason::answer);
  EXPECT_EQ(res.answer_worker, 0);
  // Every forward gives each worker one token, the last one included.
  for (int w = 0; w < 3; ++w) EXPECT_EQ(res.tokens_per_worker[w], res.serial_steps) << w;
  const json doc = rec.to_json(res);
  EXPECT_EQ(doc["tokens"].size(), static_cast<size_t>(3 * res.serial_steps));
  EXPECT_EQ(doc["stats"]["total_tokens"], 3 * res.serial_steps);
}

// A prompt that fits but leaves no room for the first serial step (its step openings and layout
// texts) is an error, like a prompt that fills the context, not a 0-step run.
TEST(Transcript, ContextFullBeforeTheFirstStepIsAnError) {
  cpu::CpuBackend be(session_model(spec()));
  ByteCodec codec;
  Formatting f = test_formatting(0);
  ScriptPicker picker({worker_script(0), worker_script(1)});
  SessionOptions opt;
  opt.n_workers = 2;
  opt.max_context = static_cast<int64_t>(prompt().size() + f.layout.history_header.size()) + 5;
  Session s(be, codec, f, opt, picker);
  try {
    s.run(prompt());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("leave no room for the first serial step within the "
                                         "context limit of " +
                                         std::to_string(opt.max_context) + " tokens"),
              std::string::npos)
        << e.what();
  }
}

// The request builder's count of the first serial step (request_check.h first_step_tokens) is
// the session's own: with the context at prompt + that count the first forward runs, one token
// less and the session refuses it; check_first_step_fits, which leaves one more token for the
// first generated one, refuses exactly the contexts below prompt + count + 1.
TEST(Transcript, FirstStepTokensIsTheLongestViewOfTheFirstForward) {
  cpu::CpuBackend be(session_model(spec()));
  ByteCodec codec;
  const Formatting f = test_formatting(0);
  const auto count = [&codec](const std::string& t) {
    return static_cast<int64_t>(codec.encode(t).size());
  };
  const int64_t p = static_cast<int64_t>(prompt().size());
  for (Layout layout : {Layout::combined, Layout::interleaved, Layout::contiguous}) {
    for (int n : {1, 2, 3}) {
      const int64_t first = first_step_tokens(f, layout, n, false, count);
      SCOPED_TRACE(std::string(layout_name(layout)) + " x" + std::to_string(n) + ": " +
                   std::to_string(first) + " tokens");
      ASSERT_GT(first, 0);
      for (int64_t room : {int64_t{0}, int64_t{-1}}) {
        std::vector<std::vector<int32_t>> scripts;
        for (int w = 0; w < n; ++w) scripts.push_back(worker_script(w));
        ScriptPicker picker(scripts);
        SessionOptions opt;
        opt.n_workers = n;
        opt.layout = layout;
        opt.max_context = p + first + room;
        Session s(be, codec, f, opt, picker);
        if (room == 0) {
          const SessionResult r = s.run(prompt());
          EXPECT_EQ(r.stop_reason, StopReason::max_context);
        } else {
          EXPECT_THROW(s.run(prompt()), Error);
        }
      }
      EXPECT_NO_THROW(check_first_step_fits(p, first, p + first + 1, 0, n, layout));
      EXPECT_THROW(check_first_step_fits(p, first, p + first, 0, n, layout), RequestError);
    }
  }
}

// Interleaved workers each see the history and their own step; the finisher sees everyone's
// text and its suffix, which may not fit where the workers' views still did. Then it does not
// run (context_full, no answer), and no forward, the finisher's included, reads past the limit.
TEST(Transcript, AFinisherWhoseViewPassesTheContextDoesNotRun) {
  cpu::CpuBackend be(session_model(spec()));
  ByteCodec codec;
  const Formatting f = test_formatting(0);
  struct Longest : SessionObserver {
    const Backend* be = nullptr;
    int64_t longest = 0;
    int finisher_forwards = 0;
    void measure(const ForwardRecord& r) {
      for (const auto& view : r.views) {
        int64_t len = 0;
        for (BlockId b : view) len += be->block_len(b);
        longest = std::max(longest, len);
      }
    }
    void on_forward(const ForwardRecord& r) override { measure(r); }
    void on_finisher_forward(const ForwardRecord& r) override {
      measure(r);
      finisher_forwards += 1;
    }
  };
  for (int64_t room : {int64_t{60}, int64_t{2000}}) {
    ScriptPicker picker({worker_script(0), worker_script(1), worker_script(2)});
    SessionOptions opt;
    opt.n_workers = 3;
    opt.layout = Layout::interleaved;
    opt.max_context = static_cast<int64_t>(prompt().size()) + room;
    opt.budget = 40;
    Longest obs;
    obs.be = &be;
    Session s(be, codec, f, opt, picker);
    s.set_observer(&obs);
    const SessionResult r = s.run(prompt());
    ASSERT_TRUE(r.finisher.has_value());
    EXPECT_LE(obs.longest, opt.max_context);
    if (room == 60) {  // stopped by the context: three steps and the suffix do not fit
      EXPECT_EQ(r.stop_reason, StopReason::max_context);
      EXPECT_TRUE(r.finisher->context_full);
      EXPECT_EQ(r.finisher->continuation, "");
      EXPECT_FALSE(r.answer.has_value());
      EXPECT_EQ(obs.finisher_forwards, 0);
      EXPECT_EQ(finisher_json(*r.finisher)["context_full"], true);
    } else {  // the budget ends it with room to spare: the finisher runs
      EXPECT_EQ(r.stop_reason, StopReason::budget);
      EXPECT_FALSE(r.finisher->context_full);
      EXPECT_GT(obs.finisher_forwards, 0);
      EXPECT_FALSE(finisher_json(*r.finisher).contains("context_full"));
    }
  }
}

// The sentence of a prompt without room for the first serial step, by hand: 1000 + 40 + 1 tokens;
// fewer workers or the interleaved layout are advised only where the other workers' steps are in
// every view.
TEST(Transcript, FirstStepFitsSaysTheCountsAndTheLimit) {
  auto message = [](int64_t max_context, int64_t model_context, int n = 2,
                    Layout layout = Layout::combined) {
    try {
      check_first_step_fits(1000, 40, max_context, model_context, n, layout);
    } catch (const RequestError& e) {
      EXPECT_EQ(e.field(), RequestField::context);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string counts =
      ". However, you requested 1041 tokens (1000 in the problem with the formatting's prompt, "
      "40 in the layout's texts and the workers' first step openings, 1 in the completion). "
      "Please shorten the problem";
  const std::string others = ", or use fewer workers or the interleaved layout.";
  EXPECT_EQ(message(0, 1024),
            "This model's maximum context length is 1024 tokens" + counts + others);
  EXPECT_EQ(message(1024, 4096),
            "The context limit (max_context) is 1024 tokens, below the "
            "model's 4096" +
                counts + others);
  EXPECT_EQ(message(1040, 0),
            "This model's maximum context length is 1040 tokens" + counts + others);
  EXPECT_EQ(message(1040, 0, 4, Layout::contiguous),
            "This model's maximum context length is 1040 tokens" + counts + others);
  EXPECT_EQ(message(1040, 0, 1),
            "This model's maximum context length is 1040 tokens" + counts + ".");
  EXPECT_EQ(message(1040, 0, 4, Layout::interleaved),
            "This model's maximum context length is 1040 tokens" + counts + ".");
  EXPECT_EQ(message(1040, 0, 4, Layout::independent),
            "This model's maximum context length is 1040 tokens" + counts + ".");
  EXPECT_EQ(message(1041, 4096), "no error");
  EXPECT_EQ(message(0, 1041), "no error");
  EXPECT_EQ(message(0, 0), "no error");  // no context known: nothing to check
}

// The logits dump: one row per sampled token, in the transcript's order; each row is the one the
// token was drawn from (ScriptPicker ignores logits, so check against the forwards' rows).
TEST(LogitsDump, OneRowPerSampledTokenFromItsForward) {
  cpu::CpuBackend be(session_model(spec()));
  ByteCodec codec;
  Formatting f = builtin_formatting("plain");  // empty step openings: first tokens from the prompt
  ScriptPicker picker({worker_script(0), worker_script(1)});
  SessionOptions opt;
  opt.n_workers = 2;
  opt.budget = 6;
  Session s(be, codec, f, opt, picker);
  struct Keep : SessionObserver {
    std::map<int64_t, std::pair<std::vector<int>, std::vector<float>>> rows;  // by serial step
    void on_forward(const ForwardRecord& r) override {
      rows[r.serial_step] = {r.logit_workers, *r.logits};
    }
  } keep;
  const std::string path = tmp("logits.npy");
  LogitsDumper dump(path, kToyVocab);
  TranscriptRecorder rec({"Alice", "Bob"});
  MultiObserver obs;
  obs.add(&keep);
  obs.add(&dump);
  obs.add(&rec);
  s.set_observer(&obs);
  const SessionResult res = s.run(prompt());
  dump.close();
  const json doc = rec.to_json(res);
  const json side = json::parse(read_file(path + ".json", "x"));
  const size_t n = doc["tokens"].size();
  ASSERT_EQ(side["shape"], (json{n, kToyVocab}));
  ASSERT_EQ(side["rows"].size(), n);
  const std::string bytes = read_file(path, "x");
  ASSERT_EQ(bytes.size(), 128 + n * kToyVocab * 4);
  for (size_t i = 0; i < n; ++i) {
    const json& t = doc["tokens"][i];
    EXPECT_EQ(side["rows"][i]["serial_step"], t["serial_step"]);
    EXPECT_EQ(side["rows"][i]["worker"], t["worker"]);
    const auto& [workers, logits] = keep.rows.at(t["serial_step"].get<int64_t>());
    size_t r = 0;  // the prompt's row (serial step 0) serves every worker
    if (t["serial_step"] != 0)
      r = std::find(workers.begin(), workers.end(), t["worker"].get<int>()) - workers.begin();
    std::vector<float> row(kToyVocab);
    std::memcpy(row.data(), bytes.data() + 128 + i * kToyVocab * 4, kToyVocab * 4);
    EXPECT_EQ(row, std::vector<float>(logits.begin() + r * kToyVocab,
                                      logits.begin() + (r + 1) * kToyVocab))
        << "token " << i;
  }
  EXPECT_EQ(doc["tokens"][0]["serial_step"], 0);
  EXPECT_EQ(doc["tokens"][1]["serial_step"], 0);
  fs::remove(path);
  fs::remove(path + ".json");
}

// RunFiles: the partial transcript exists while the run goes and is replaced by the whole
// transcript at the end; bad names are refused before anything runs.
TEST(RunFiles, PartialTranscriptThenTheWholeOne) {
  const std::string json_path = tmp("run.json");
  EXPECT_THROW(RunFiles({json_path, json_path, ""}, kToyVocab), Error);
  EXPECT_THROW(RunFiles({::testing::TempDir(), "", ""}, kToyVocab), Error);
  cpu::CpuBackend be(session_model(spec()));
  ByteCodec codec;
  Formatting f = test_formatting(0);
  ScriptPicker picker({worker_script(0), worker_script(1)});
  SessionOptions opt;
  opt.n_workers = 2;
  opt.budget = 8;
  Session s(be, codec, f, opt, picker);
  RunFiles files({json_path, "", ""}, kToyVocab);
  struct Peek : SessionObserver {
    std::string path;
    size_t lines_seen = 0;
    void on_forward(const ForwardRecord& r) override {
      if (r.serial_step == 5) lines_seen = read_lines(path + ".partial.jsonl").size();
    }
  } peek;
  peek.path = json_path;
  MultiObserver obs;
  files.start(s, codec, {"Alice", "Bob"}, {{"model", "toy"}});
  obs.add(files.observer());
  obs.add(&peek);
  s.set_observer(&obs);
  const SessionResult res = s.run(prompt());
  EXPECT_GT(peek.lines_seen, 5u) << "events are on disk while the run goes";
  EXPECT_FALSE(fs::exists(json_path)) << "the transcript appears only when complete";
  files.finish(res);
  EXPECT_FALSE(fs::exists(json_path + ".partial.jsonl"));
  const json doc = json::parse(read_file(json_path, "x"));
  EXPECT_EQ(doc["model"], "toy");
  EXPECT_EQ(doc["stats"]["serial_steps"], 8);
  fs::remove(json_path);
}

}  // namespace
}  // namespace hogwild::testing
