// Units of the server: UTF-8 streaming (then the stop strings of sampling/stop_strings.h), request
// validation (every client mistake a 4xx naming the field), live steering (a note inserted between
// serial steps is in every worker's view from the next serial step on), admission (every request
// that fits runs in the same engine forward; the /metrics histograms count what happened), and
// the stop strings through the scheduler over a scripted engine (what they cut, finish_reason).
#include <gtest/gtest.h>

#include <future>
#include <map>

#include "cpu/cpu_backend.h"
#include "hogwild/picker.h"
#include "sampling/stop_strings.h"
#include "server/api_error.h"
#include "server/prompting.h"
#include "server/request.h"
#include "server/responses.h"
#include "server/scheduler.h"
#include "server/server_engine.h"
#include "server/text_stream.h"
#include "tests/hogwild/test_support.h"

namespace hogwild::server {
namespace {

const std::string kFFFD = "\xEF\xBF\xBD";

TEST(Utf8Decoder, HoldsBackASplitCharacter) {
  Utf8Decoder d;
  EXPECT_EQ(d.push("a\xE2"), "a");
  EXPECT_EQ(d.push("\x82"), "");
  EXPECT_EQ(d.push("\xAC"
                   "b"),
            "\xE2\x82\xAC"
            "b");  // U+20AC
  EXPECT_EQ(d.push("\xF0\x9F\x98"), "");
  EXPECT_EQ(d.push("\x80"), "\xF0\x9F\x98\x80");  // U+1F600
  EXPECT_EQ(d.flush(), "");
}

TEST(Utf8Decoder, ReplacesEachMaximalInvalidSubpart) {
  // Unicode 15 §3.9 "U+FFFD Substitution of Maximal Subparts", table 3-8's examples.
  Utf8Decoder d;
  EXPECT_EQ(d.push("\xC0\xAF"), kFFFD + kFFFD);              // overlong lead, lone continuation
  EXPECT_EQ(d.push("\xED\xA0\x80"), kFFFD + kFFFD + kFFFD);  // surrogate
  EXPECT_EQ(d.push("\xF4\x90\x80\x80"), kFFFD + kFFFD + kFFFD + kFFFD);  // above U+10FFFF
  EXPECT_EQ(d.push("\xE1\x80"
                   "A"),
            kFFFD + "A");  // truncated sequence then ASCII
  EXPECT_EQ(d.push("\xFF"), kFFFD);
  EXPECT_EQ(d.push("\xE2\x82"), "");
  EXPECT_EQ(d.flush(), kFFFD);  // incomplete at the end: one replacement
  EXPECT_TRUE(valid_utf8(kFFFD + "\xE2\x82\xAC"));
  EXPECT_FALSE(valid_utf8("\xE2\x82"));
}

// The server's content path: token bytes through the UTF-8 decoder, then the stop strings. A stop
// string whose first character is split across tokens is held back whole and never sent.
TEST(StopStrings, AStopSplitInsideACharacterIsNeverSent) {
  Utf8Decoder d;
  StopStrings s({"\xE2\x82\xACuro"});  // "€uro"
  EXPECT_EQ(s.push(d.push("5 \xE2")), "5 ");
  EXPECT_EQ(s.push(d.push("\x82")), "");
  EXPECT_EQ(s.push(d.push("\xACur")), "");  // "€ur" may start "€uro"
  EXPECT_EQ(s.push(d.push("o!")), "");
  EXPECT_TRUE(s.stopped());
  Utf8Decoder d2;
  StopStrings t({"\xE2\x82\xACuro"});
  EXPECT_EQ(t.push(d2.push("\xE2\x82")), "");
  EXPECT_EQ(t.push(d2.push("\xACu")), "");
  EXPECT_EQ(t.push(d2.push("rp")), "\xE2\x82\xACurp");
  EXPECT_EQ(t.push(d2.flush()), "");
  EXPECT_EQ(t.flush(), "");
  EXPECT_FALSE(t.stopped());
}

// (body, endpoint, status, param, code) for every kind of mistake the issue lists.
struct BadCase {
  std::string body;
  Endpoint ep;
  int status;
  std::string param, code;
};

TEST(RequestValidation, EveryMistakeIsA4xxNamingTheField) {
  const Endpoint C = Endpoint::chat, P = Endpoint::completion;
  const std::string msgs = R"("messages":[{"role":"user","content":"hi"}])";
  const std::vector<BadCase> cases = {
      {"{", C, 400, "", "invalid_json"},
      {"", C, 400, "", "invalid_json"},
      {"[1,2]", C, 400, "", ""},
      {"\"text\"", C, 400, "", ""},
      {"{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}", C, 400, "", "invalid_utf8"},
      {R"({"model":"gpt-4",)" + msgs + "}", C, 404, "model", "model_not_found"},
      {"{}", C, 400, "messages", ""},
      {R"({"messages":"hi"})", C, 400, "messages", ""},
      {R"({"messages":[]})", C, 400, "messages", ""},
      {R"({"messages":[{"role":"robot","content":"x"}]})", C, 400, "messages[0].role", ""},
      {R"({"messages":[{"role":"user"}]})", C, 400, "messages[0].content", ""},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})", C, 400,
       "messages[0].content[0]", ""},
      {"{}", P, 400, "prompt", ""},
      {R"({"prompt":5})", P, 400, "prompt", ""},
      {"{" + msgs + R"(,"max_tokens":"10"})", C, 400, "max_tokens", ""},
      {"{" + msgs + R"(,"max_tokens":0})", C, 400, "max_tokens", ""},
      {"{" + msgs + R"(,"max_tokens":-1})", C, 400, "max_tokens", ""},
      {"{" + msgs + R"(,"max_tokens":1.5})", C, 400, "max_tokens", ""},
      {"{" + msgs + R"(,"max_completion_tokens":-3})", C, 400, "max_completion_tokens", ""},
      {"{" + msgs + R"(,"temperature":2.5})", C, 400, "temperature", ""},
      {"{" + msgs + R"(,"seed":-5})", C, 400, "seed", ""},
      {"{" + msgs + R"(,"stop":[""]})", C, 400, "stop", ""},
      {"{" + msgs + R"(,"temperature":"hot"})", C, 400, "temperature", ""},
      {"{" + msgs + R"(,"top_p":0})", C, 400, "top_p", ""},
      {"{" + msgs + R"(,"top_p":1.01})", C, 400, "top_p", ""},
      {"{" + msgs + R"(,"top_k":-2})", C, 400, "top_k", ""},
      {"{" + msgs + R"(,"min_p":1.5})", C, 400, "min_p", ""},
      {"{" + msgs + R"(,"seed":"x"})", C, 400, "seed", ""},
      {"{" + msgs + R"(,"n":0})", C, 400, "n", ""},
      {"{" + msgs + R"(,"n":9})", C, 400, "n", ""},
      {"{" + msgs + R"(,"stop":""})", C, 400, "stop", ""},
      {"{" + msgs + R"(,"stop":["a",""]})", C, 400, "stop", ""},
      {"{" + msgs + R"(,"stop":[1]})", C, 400, "stop", ""},
      {"{" + msgs + R"(,"stream":"yes"})", C, 400, "stream", ""},
      {"{" + msgs + R"(,"stream_options":{"include_usage":true}})", C, 400, "stream_options", ""},
      {"{" + msgs + R"(,"hogwild":3})", C, 400, "hogwild", ""},
      // Workers sharing a cache are checked against the formatting when the request is built
      // (tests/server/request_builder.test.mjs); here the table's range of independent ones and a
      // count beyond any range.
      {"{" + msgs + R"(,"hogwild":{"layout":"independent","workers":0}})", C, 400,
       "hogwild.workers", ""},
      {"{" + msgs + R"(,"hogwild":{"layout":"independent","workers":65}})", C, 400,
       "hogwild.workers", ""},
      {"{" + msgs + R"(,"hogwild":{"skeleton":true,"workers":65}})", C, 400, "hogwild.workers", ""},
      {"{" + msgs + R"(,"hogwild":{"workers":4294967298}})", C, 400, "hogwild.workers", ""},
      {"{" + msgs + R"(,"hogwild":{"workers":"two"}})", C, 400, "hogwild.workers", ""},
      {"{" + msgs + R"(,"hogwild":{"layout":"diagonal"}})", C, 400, "hogwild.layout", ""},
      {"{" + msgs + R"(,"hogwild":{"budget":-1}})", C, 400, "hogwild.budget", ""},
      {"{" + msgs + R"(,"hogwild":{"collab_every":-2}})", C, 400, "hogwild.collab_every", ""},
      {"{" + msgs + R"(,"hogwild":{"format":"/etc/passwd"}})", C, 400, "hogwild.format", ""},
      {"{" + msgs + R"(,"hogwild":{"wrokers":2}})", C, 400, "hogwild.wrokers", ""},
      {"{" + msgs + R"(,"tools":[{"type":"function"}]})", C, 400, "tools", "unsupported_parameter"},
      {"{" + msgs + R"(,"logprobs":true})", C, 400, "logprobs", "unsupported_parameter"},
      {"{" + msgs + R"(,"presence_penalty":0.5})", C, 400, "presence_penalty",
       "unsupported_parameter"},
      {"{" + msgs + R"(,"chat_template_kwargs":[]})", C, 400, "chat_template_kwargs", ""},
      {R"({"prompt":"x","chat_template_kwargs":{}})", P, 400, "chat_template_kwargs", ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.body);
    try {
      parse_completion_request(c.body, c.ep, "tiny");
      ADD_FAILURE() << "accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status, c.status) << e.what();
      EXPECT_EQ(e.param, c.param) << e.what();
      if (!c.code.empty()) {
        EXPECT_EQ(e.code, c.code);
      }
      const nlohmann::json j = error_json(e);
      EXPECT_EQ(j["error"]["type"], c.status == 404 ? "not_found_error" : "invalid_request_error");
    }
  }
}

// Numbers a double cannot hold (1e999), integers beyond 64 bits and values that round out of
// range in the engine's 32-bit floats: each a 400 naming the field, never a library exception.
TEST(RequestValidation, NumbersOutOfRangeAre400sNamingTheField) {
  const std::string msgs = R"("messages":[{"role":"user","content":"hi"}])";
  struct Case {
    std::string body, param, says;
  };
  const std::vector<Case> cases = {
      {"{" + msgs + R"(,"temperature":1e999})", "temperature", "too large for a double"},
      {"{" + msgs + R"(,"max_tokens":-1e999})", "max_tokens", "too large for a double"},
      {"{" + msgs + R"(,"seed":1e999})", "seed", "too large for a double"},
      {"{" + msgs + R"(,"hogwild":{"budget":1e999}})", "hogwild.budget", "too large for a double"},
      {R"({"messages":[{"role":"user","content":"hi"},{"x":[1,2,1e999]}]})", "messages[1].x[2]",
       "too large for a double"},
      {"{" + msgs + R"(,"seed":1180591620717411303424})", "seed", "'seed' is too large"},
      {"{" + msgs + R"(,"seed":-1180591620717411303424})", "seed", "'seed' is too small"},
      {"{" + msgs + R"(,"top_p":1e-300})", "top_p", "it must be in (0, 1]"},
      {"{" + msgs + R"(,"repetition_penalty":1e-60})", "repetition_penalty", "32-bit float"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.body);
    try {
      parse_completion_request(c.body, Endpoint::chat, "tiny");
      ADD_FAILURE() << "accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status, 400) << e.what();
      EXPECT_EQ(e.param, c.param) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
    }
  }
  // Nesting: 64 levels are read, deeper is a 400 naming where (never a walk that overflows the
  // stack).
  const std::string deep = std::string(62, '[') + std::string(62, ']');  // 64 with the two objects
  EXPECT_NO_THROW(parse_completion_request(
      "{" + msgs + R"(,"chat_template_kwargs":{"x":)" + deep + "}}", Endpoint::chat, "tiny"));
  for (const std::string& body : {"{" + msgs + R"(,"chat_template_kwargs":{"x":)" +
                                      std::string(500000, '[') + std::string(500000, ']') + "}}",
                                  std::string(100000, '[')}) {
    try {
      parse_completion_request(body, Endpoint::chat, "tiny");
      ADD_FAILURE() << "accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status, 400);
      EXPECT_EQ(e.code, "invalid_json");
      EXPECT_NE(std::string(e.what()).find("deeper than 64 levels"), std::string::npos) << e.what();
    }
  }
  // In range after rounding: accepted.
  const CompletionRequest r = parse_completion_request(
      "{" + msgs + R"(,"top_p":1e-30,"seed":9007199254740993})", Endpoint::chat, "tiny");
  EXPECT_EQ(*r.seed, 9007199254740993);
}

// The server maps its JSON fields onto the table of ranges (core/request_fields.h): an HTTP 400
// carries the very sentence the CLI prints for the same mistake (tests/hogwild/test_run_cli.cpp).
TEST(RequestValidation, SpeaksTheTablesSentence) {
  const std::string msgs = R"("messages":[{"role":"user","content":"hi"}])";
  const struct {
    std::string body, param, message;
  } cases[] = {
      {R"(,"hogwild":{"budget":-1})", "hogwild.budget",
       "budget is -1; it must be in 0..1000000 serial steps (0 = until an answer)"},
      {R"(,"seed":-5)", "seed",
       "seed is -5; it must be in -1..9223372036854775807 (-1 = a random seed)"},
      {R"(,"top_p":0)", "top_p", "top_p is 0; it must be in (0, 1] (1 = off)"},
      {R"(,"hogwild":{"collab_every":-2})", "hogwild.collab_every",
       "collab_every is -2; it must be in -1..1000000 generated tokens (0 = no collaboration "
       "check, -1 = the formatting's)"},
      {R"(,"hogwild":{"workers":4294967298})", "hogwild.workers",
       "workers is 4294967298; it must be in 1..64 workers"},
      // `hogwild run --layout diagonal`'s sentence (hogwild/layout.h parse_layout).
      {R"(,"hogwild":{"layout":"diagonal"})", "hogwild.layout",
       "unknown layout 'diagonal': use combined, interleaved, contiguous or independent"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.body);
    try {
      parse_completion_request("{" + msgs + c.body + "}", Endpoint::chat, "tiny");
      ADD_FAILURE() << "accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status, 400);
      EXPECT_EQ(e.param, c.param);
      EXPECT_EQ(std::string(e.what()), c.message);
    }
  }
}

// A request builder's RequestError (engine/request.h make_request) names its field as the JSON
// path of the request body: the `param` of the 400.
TEST(RequestValidation, ARequestFieldIsItsJsonPath) {
  const struct {
    RequestField field;
    Endpoint endpoint;
    const char* param;
  } cases[] = {
      {RequestField::workers, Endpoint::chat, "hogwild.workers"},
      {RequestField::budget, Endpoint::completion, "hogwild.budget"},
      {RequestField::collab_every, Endpoint::chat, "hogwild.collab_every"},
      {RequestField::kv_budget, Endpoint::chat, "hogwild.kv_budget"},
      {RequestField::kv_policy, Endpoint::chat, "hogwild.kv_policy"},
      {RequestField::kv_redundancy, Endpoint::chat, "hogwild.kv_redundancy"},
      {RequestField::problem, Endpoint::chat, "messages"},
      {RequestField::problem, Endpoint::completion, "prompt"},
      {RequestField::max_tokens, Endpoint::chat, "max_tokens"},
      {RequestField::temperature, Endpoint::chat, "temperature"},
      {RequestField::repetition_penalty, Endpoint::completion, "repetition_penalty"},
      {RequestField::seed, Endpoint::chat, "seed"},
  };
  for (const auto& c : cases) EXPECT_EQ(request_param(c.field, c.endpoint), c.param);
  // Workers sharing a cache reach the builder, which knows the formatting's names.
  const CompletionRequest r = parse_completion_request(R"({"prompt":"x","hogwild":{"workers":9}})",
                                                       Endpoint::completion, "tiny");
  ASSERT_TRUE(r.hogwild);
  EXPECT_EQ(r.hogwild->workers, 9);
}

TEST(RequestValidation, ReadsTheFieldsClientsSend) {
  const CompletionRequest r = parse_completion_request(
      R"({"model":"tiny","messages":[{"role":"developer","content":"be brief"},
          {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],
          "max_completion_tokens":7,"temperature":0,"top_p":0.9,"top_k":-1,"min_p":0.05,
          "seed":-1,"stop":"##","stream":true,"stream_options":{"include_usage":true},"n":2,
          "chat_template_kwargs":{"enable_thinking":false},"user":"ignored",
          "hogwild":{"workers":4,"layout":"interleaved","budget":64,"collab_every":0}})",
      Endpoint::chat, "tiny");
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[1].content, "ab");
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_EQ(r.temperature, 0.0);
  EXPECT_EQ(r.top_k, 0);
  EXPECT_EQ(r.seed, -1);  // a random seed, as --seed -1 on the CLI
  EXPECT_EQ(r.stop, std::vector<std::string>{"##"});
  EXPECT_TRUE(r.stream && r.include_usage);
  EXPECT_EQ(r.n, 2);
  EXPECT_EQ(r.template_kwargs["enable_thinking"], false);
  ASSERT_TRUE(r.hogwild);
  EXPECT_EQ(r.hogwild->workers, 4);
  EXPECT_EQ(r.hogwild->layout, Layout::interleaved);
  EXPECT_EQ(r.hogwild->budget, 64);
  EXPECT_EQ(r.hogwild->collab_every, 0);
  const CompletionRequest p =
      parse_completion_request(R"({"prompt":["once"],"max_tokens":3})", Endpoint::completion, "m");
  EXPECT_EQ(p.prompt, "once");
  EXPECT_FALSE(p.hogwild);
  const NoteRequest note = parse_note_request(R"({"role":"user","content":"check n=1"})");
  EXPECT_EQ(note.text, "check n=1");
  EXPECT_EQ(note.author, "User");
  EXPECT_EQ(parse_note_request(R"({"content":"x","name":"Ann"})").author, "Ann");
  EXPECT_THROW(parse_note_request(R"({"content":"x","name":"a\nb"})"), ApiError);
  EXPECT_THROW(parse_note_request(R"({"content":"  "})"), ApiError);
  EXPECT_THROW(parse_note_request(R"({"role":"assistant","content":"x"})"), ApiError);
}

// Records block contents (token ids) and every forward's views, beneath the steering backend.
class RecordingBackend : public Backend {
 public:
  explicit RecordingBackend(Backend& in) : in_(in) {}
  const ModelConfig& config() const override { return in_.config(); }
  BlockId new_block() override {
    BlockId b = in_.new_block();
    blocks_[b].clear();
    return b;
  }
  void free_block(BlockId b) override {
    in_.free_block(b);
    blocks_.erase(b);
  }
  int64_t block_len(BlockId b) const override { return in_.block_len(b); }
  void truncate_block(BlockId b, int64_t n) override {
    in_.truncate_block(b, n);
    blocks_[b].resize(n);
  }
  void append_block(BlockId dst, BlockId src) override {
    in_.append_block(dst, src);
    blocks_[dst].insert(blocks_[dst].end(), blocks_[src].begin(), blocks_[src].end());
  }
  void read_block(BlockId b, int64_t l, std::vector<float>& k,
                  std::vector<float>& v) const override {
    in_.read_block(b, l, k, v);
  }
  int64_t kv_used_tokens() const override { return in_.kv_used_tokens(); }
  int64_t live_blocks() const override { return in_.live_blocks(); }
  using Backend::forward;
  void forward(const ForwardBatch& batch, ForwardResult& out) override {
    in_.forward(batch, out);
    record(batch);
  }
  std::vector<std::vector<std::vector<int32_t>>> forwards;  // per forward, per view: token ids

 private:
  void record(const ForwardBatch& batch) {
    for (auto& t : batch.tokens) blocks_[t.block].push_back(t.token_id);
    // Each view as the token sequence it reads.
    std::vector<std::vector<int32_t>> views;
    for (auto& v : batch.views) {
      views.emplace_back();
      for (BlockId b : v)
        views.back().insert(views.back().end(), blocks_[b].begin(), blocks_[b].end());
    }
    forwards.push_back(std::move(views));
  }
  Backend& in_;
  std::map<BlockId, std::vector<int32_t>> blocks_;
};

bool contains(const std::vector<int32_t>& hay, const std::vector<int32_t>& needle) {
  return std::search(hay.begin(), hay.end(), needle.begin(), needle.end()) != hay.end();
}

// Live steering through the server's engine: a note inserted between serial steps is written in
// the forward of the next serial step s (on_note says s) and every worker's view holds it from
// serial step s + 1 on, right after the finished steps; no view had it before. The session's
// blocks are freed when it ends.
TEST(Steering, NoteIsInEveryViewFromTheSerialStepAfterItsForward) {
  using namespace hogwild::testing;
  for (Layout layout : {Layout::combined, Layout::interleaved}) {
    SCOPED_TRACE(layout_name(layout));
    cpu::CpuBackend cpu(session_model(session_specs()[2]));
    RecordingBackend rec(cpu);
    ByteCodec codec;
    ServerEngine engine(rec, codec, EngineOptions{});
    GenerationRequest g;
    g.formatting = test_formatting();
    g.prompt = codec.encode("Q: what is 6 times 7?\n");
    g.options.n_workers = 3;
    g.options.layout = layout;
    g.options.budget = 20;
    g.sampling.do_sample = true;
    g.sampling.temperature = 1.0f;
    g.sampling.seed = 3;
    struct Obs : SessionObserver {
      RecordingBackend* rec;
      std::vector<std::pair<int64_t, std::vector<std::vector<int32_t>>>>
          forwards;  // (serial, views)
      std::vector<std::tuple<std::string, std::string, int64_t>> notes;
      void on_forward(const ForwardRecord& r) override {
        forwards.emplace_back(r.serial_step, rec->forwards.back());
      }
      void on_note(const std::string& a, const std::string& t, int64_t s) override {
        notes.emplace_back(a, t, s);
      }
    } obs;
    obs.rec = &rec;
    const SessionId id = engine.submit(g, &obs);
    const int64_t insert_after = 9;  // serial step after which the note is queued
    while (engine.step()) {
      if (!obs.forwards.empty() && obs.forwards.back().first == insert_after && obs.notes.empty() &&
          !engine.finished(id))
        engine.insert_note(id, "Ann", "try 42");
    }
    ASSERT_TRUE(engine.finished(id));
    const SessionResult res = engine.take_result(id);
    EXPECT_EQ(res.serial_steps, 20);
    const std::string text = g.formatting.note_text("Ann", "try 42");
    EXPECT_EQ(text, "**Note from Ann:** try 42\n\n");
    ASSERT_EQ(obs.notes.size(), 1u);
    EXPECT_EQ(std::get<0>(obs.notes[0]), "Ann");
    EXPECT_EQ(std::get<1>(obs.notes[0]), text);
    const int64_t s = std::get<2>(obs.notes[0]);
    EXPECT_EQ(s, insert_after + 1);
    const std::vector<int32_t> note = codec.encode(text);
    int64_t checked = 0;
    for (auto& [serial, views] : obs.forwards) {
      if (serial == 0 || serial == s) continue;  // prefill; the note's own forward
      for (auto& v : views) EXPECT_EQ(contains(v, note), serial > s) << "serial step " << serial;
      checked += serial > s;
    }
    EXPECT_EQ(checked, 20 - s);
    EXPECT_EQ(engine.gauges().blocks, 0);
  }
}

// Admission through the server's engine thread: 16 plain completions of at most 4 tokens (one
// worker, no budget, as build_generation makes them), submitted before the engine thread takes
// commands, are all admitted and prefilled in its first forward although the KV pool holds only
// two context-long sessions (a completion reserves its prompt and max_tokens, not the context). A
// 17th request over the scheduler's limit is a 429 counted as rejected; /metrics' histograms hold
// one preparation, queue time and time to first token per request and one inter-token gap per
// token after each session's first.
TEST(Scheduler, EveryRequestThatFitsRunsInTheSameForward) {
  using namespace hogwild::testing;
  constexpr int kRequests = 16;
  constexpr int64_t kMaxTokens = 4;
  const test::TinySpec spec = session_specs()[2];
  ByteCodec codec;
  auto request = [&](int i) {
    GenerationRequest g;
    g.formatting = test_formatting();
    g.formatting.finisher.max_tokens = 1;
    g.prompt = codec.encode(fmt::format("Q{}: what is 6 times 7?\n", i));
    g.options.n_workers = 1;
    g.options.stop_on_answer = false;
    g.options.max_tokens_per_worker = kMaxTokens;
    g.options.device_sampling = true;
    g.sampling.do_sample = true;
    g.sampling.temperature = 1.0f;
    g.sampling.seed = static_cast<uint64_t>(i);
    return g;
  };
  GenerationRequest unbounded = request(0);
  unbounded.options.max_tokens_per_worker = 0;
  const ModelWeights weights = session_model(spec);
  const int64_t context_long =
      Session::kv_tokens_needed(unbounded.options, unbounded.formatting, codec, weights.config,
                                static_cast<int64_t>(unbounded.prompt.size()));
  cpu::CpuBackend cpu(session_model(spec), 2 * context_long);
  ASSERT_LT(cpu.kv_capacity_tokens(), 3 * context_long);
  std::promise<void> go;
  std::shared_future<void> going = go.get_future().share();
  EngineOptions eo;
  eo.max_sessions = 64;
  Scheduler sched(
      [&] {
        going.wait();  // every submit below is one command list when the loop starts
        return std::make_unique<ServerEngine>(cpu, codec, eo);
      },
      kRequests);
  std::vector<std::shared_ptr<Channel>> channels;
  for (int i = 0; i < kRequests; ++i) {
    Job job;
    job.id = fmt::format("cmpl-{}", i);
    job.choices = {request(i)};
    job.received = std::chrono::steady_clock::now();
    channels.push_back(sched.submit(std::move(job)));
  }
  Job extra;
  extra.id = "cmpl-extra";
  extra.choices = {request(99)};
  try {
    sched.submit(std::move(extra));
    ADD_FAILURE() << "a request over the limit was admitted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 429);
  }
  go.set_value();
  int64_t gaps = 0;
  for (auto& ch : channels) {
    std::vector<Event> evs, all;
    while (ch->pop_all(evs, std::chrono::milliseconds(100))) {
      all.insert(all.end(), evs.begin(), evs.end());
      evs.clear();
    }
    ASSERT_FALSE(all.empty());
    EXPECT_EQ(all.front().kind, Event::Kind::accepted);
    EXPECT_FALSE(all.front().error.has_value());
    ASSERT_EQ(all.back().kind, Event::Kind::done);
    ASSERT_EQ(all.back().tokens_per_worker.size(), 1u);
    const int64_t made = all.back().tokens_per_worker[0];
    EXPECT_GE(made, 1);
    EXPECT_LE(made, kMaxTokens);
    gaps += made - 1;
  }
  const SchedulerStats st = sched.stats();
  EXPECT_EQ(st.forward_sessions_max, kRequests);
  // Bounds 0, 1, 2, 4, 8, 16, ...: one forward fed 9..16 prompt chunks, the first.
  const std::vector<double>& b = st.forward_prefills.bounds();
  const size_t le16 = std::find(b.begin(), b.end(), 16.0) - b.begin();
  ASSERT_LT(le16, b.size());
  EXPECT_EQ(st.forward_prefills.cumulative(le16) - st.forward_prefills.cumulative(le16 - 1), 1);
  EXPECT_EQ(st.forward_prefills.sum(), kRequests);  // each prompt in one chunk
  EXPECT_EQ(st.requests_finished, kRequests);
  EXPECT_EQ(st.requests_rejected, 1);
  EXPECT_EQ(st.prepare_seconds.count(), kRequests);
  EXPECT_EQ(st.queue_seconds.count(), kRequests);
  EXPECT_EQ(st.ttft_seconds.count(), kRequests);
  EXPECT_EQ(st.itl_seconds.count(), gaps);
  // All plain (Job::method's default): the same counts under "plain", none under the others.
  EXPECT_EQ(st.by_method.size(), std::size(kMethods));
  EXPECT_EQ(st.by_method.at("plain").finished, kRequests);
  EXPECT_EQ(st.by_method.at("plain").rejected, 1);
  EXPECT_EQ(st.by_method.at("plain").ttft_seconds.count(), kRequests);
  EXPECT_EQ(st.by_method.at("plain").itl_seconds.count(), gaps);
  EXPECT_EQ(st.by_method.at("hogwild").finished + st.by_method.at("hogwild").rejected, 0);
  EXPECT_EQ(st.running, 0);
  EXPECT_EQ(st.queued, 0);
}

// A scripted engine behind the scheduler (generation.h): every session, at its first step, gives
// its observer one worker's tokens (their bytes, one serial step each) and ends with the result.
class ScriptedEngine : public GenerationEngine {
 public:
  struct Script {
    std::vector<std::string> tokens;  // each token's bytes
    SessionResult result;
  };
  explicit ScriptedEngine(std::vector<Script> scripts) : scripts_(std::move(scripts)) {}
  SessionId submit(GenerationRequest, SessionObserver* obs) override {
    if (observers_.size() == scripts_.size()) throw Error("no script left");
    observers_.push_back(obs);
    done_.push_back(false);
    return static_cast<SessionId>(observers_.size());
  }
  void cancel(SessionId) override {}  // every session ends in its first step
  void insert_note(SessionId, const std::string&, const std::string&) override {}
  bool step() override {
    bool any = false;
    for (size_t i = 0; i < observers_.size(); ++i) {
      if (done_[i]) continue;
      const std::vector<std::string>& tokens = scripts_[i].tokens;
      for (size_t k = 0; k < tokens.size(); ++k)
        observers_[i]->on_token(
            {0, 1, static_cast<int64_t>(k), static_cast<int32_t>(k), tokens[k], false});
      done_[i] = true;
      any = true;
    }
    return any;
  }
  ForwardCounts last_forward() const override { return {}; }
  bool finished(SessionId id) const override { return done_.at(id - 1); }
  SessionResult take_result(SessionId id) override { return scripts_.at(id - 1).result; }
  EngineGauges gauges() const override { return {}; }

 private:
  std::vector<Script> scripts_;
  std::vector<SessionObserver*> observers_;
  std::vector<bool> done_;
};

// One request of one choice through the scheduler over a ScriptedEngine: its events, from
// `accepted` to `done`.
std::vector<Event> run_scripted(ScriptedEngine::Script script, bool hogwild,
                                std::vector<std::string> stop) {
  Scheduler sched([&] { return std::make_unique<ScriptedEngine>(std::vector{script}); }, 1);
  Job job;
  job.id = "cmpl-scripted";
  job.hogwild = hogwild;
  job.method = hogwild ? "hogwild" : "plain";
  job.stop = std::move(stop);
  GenerationRequest g;
  g.options.n_workers = 1;
  job.choices = {g};
  std::shared_ptr<Channel> ch = sched.submit(std::move(job));
  std::vector<Event> evs, all;
  while (ch->pop_all(evs, std::chrono::milliseconds(100))) {
    all.insert(all.end(), evs.begin(), evs.end());
    evs.clear();
  }
  return all;
}

std::string content_of(const std::vector<Event>& evs) {
  std::string s;
  for (const Event& e : evs)
    if (e.kind == Event::Kind::content) s += e.text;
  return s;
}

// A plain completion that ends at max_tokens while a stop string is completed by its last bytes:
// by the last token ("the end" at " end"; "café" at "é", whose first byte the decoder held back
// until the last token completed it), or only by the decoder's flush when the session has ended
// (the last token is a lone lead byte of a 2-byte character, held back as incomplete, that the
// flush turns into U+FFFD, completing "x" U+FFFD). Each is finish_reason "stop" with the content
// cut before the stop string; without one, "length" with the whole text.
TEST(SchedulerStop, AStopStringCompletedByTheLastBytesIsAStop) {
  SessionResult capped;
  capped.stop_reason = StopReason::max_tokens;
  capped.tokens_per_worker = {3};
  struct Case {
    std::vector<std::string> tokens, stop;
    std::string content, finish_reason;
  };
  const std::vector<Case> cases = {
      {{"the", " e", "nd"}, {" end"}, "the", "stop"},
      {{"caf", "\xC3", "\xA9"}, {"\xC3\xA9"}, "caf", "stop"},
      {{"Hi", " x", "\xC3"}, {"x" + kFFFD}, "Hi ", "stop"},
      {{"Hi", " x", "\xC3"}, {"y" + kFFFD}, "Hi x" + kFFFD, "length"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.stop[0]);
    const std::vector<Event> evs = run_scripted({c.tokens, capped}, false, c.stop);
    ASSERT_FALSE(evs.empty());
    ASSERT_EQ(evs.back().kind, Event::Kind::done);
    EXPECT_EQ(content_of(evs), c.content);
    EXPECT_EQ(evs.back().finish_reason, c.finish_reason);
    EXPECT_EQ(evs.back().stop_reason,
              c.finish_reason == "stop" ? StopReason::stop : StopReason::max_tokens);
  }
}

// `stop` on a hogwild request cuts the content (the answer as the client reads it), not the
// answer in "hogwild" nor the workers' text (docs/SERVER.md "Requests").
TEST(SchedulerStop, OnAHogwildRequestOnlyTheContentIsCut) {
  SessionResult r;
  r.stop_reason = StopReason::answer;
  r.answer = "17 apples";
  r.tokens_per_worker = {2};
  const std::vector<Event> evs = run_scripted({{"so 17", " apples."}, r}, true, {" apples"});
  ASSERT_FALSE(evs.empty());
  ASSERT_EQ(evs.back().kind, Event::Kind::done);
  EXPECT_EQ(content_of(evs), "17");
  EXPECT_EQ(evs.back().finish_reason, "stop");
  ResponseMeta meta;
  meta.id = "chatcmpl-scripted";
  meta.hogwild = true;
  meta.worker_names = {"Alice"};
  ResponseBuilder b(meta);
  for (const Event& e : evs) b.add(e);
  const nlohmann::json j = b.response();
  EXPECT_EQ(j["choices"][0]["message"]["content"], "17");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  const nlohmann::json& hc = j["hogwild"]["choices"][0];
  EXPECT_EQ(hc["answer"], "17 apples");
  EXPECT_EQ(hc["workers"][0]["steps"][0]["text"], "so 17 apples.");
}

// The /metrics text of a histogram: cumulative buckets by upper bound, +Inf, sum and count.
TEST(Histogram, PrometheusTextIsCumulative) {
  Histogram h({0.1, 1});
  for (double v : {0.05, 0.1, 0.5, 2.0}) h.observe(v);
  EXPECT_EQ(h.prometheus("x_seconds", "Help."),
            "# HELP x_seconds Help.\n# TYPE x_seconds histogram\n"
            "x_seconds_bucket{le=\"0.1\"} 2\nx_seconds_bucket{le=\"1\"} 3\n"
            "x_seconds_bucket{le=\"+Inf\"} 4\nx_seconds_sum 2.65\nx_seconds_count 4\n");
  // One labelled series of a family: the labels before le, and on the sum and count.
  EXPECT_EQ(h.prometheus_series("x_seconds", "method=\"plain\""),
            "x_seconds_bucket{method=\"plain\",le=\"0.1\"} 2\n"
            "x_seconds_bucket{method=\"plain\",le=\"1\"} 3\n"
            "x_seconds_bucket{method=\"plain\",le=\"+Inf\"} 4\n"
            "x_seconds_sum{method=\"plain\"} 2.65\nx_seconds_count{method=\"plain\"} 4\n");
}

}  // namespace
}  // namespace hogwild::server
