// Reasoning output of chat completions (src/server/reasoning.h, docs/SERVER.md "Reasoning
// output"): the split of streamed text at <think> / </think> for every cutting of the text into
// pieces, a missing start tag, no thinking, an unterminated thinking, where the prompt leaves the
// generation; and the responses built from a request's events: message fields and stream deltas
// of plain and hogwild chat completions.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "server/api_error.h"
#include "server/reasoning.h"
#include "server/request.h"
#include "server/responses.h"

namespace hogwild::server {
namespace {

using json = nlohmann::json;
using P = ReasoningParser;
using S = ThinkStart;

struct Split {
  std::string reasoning, content;
  bool has_reasoning = false;
};

// The text pushed in the pieces `cuts` makes (cut positions, increasing), then flushed.
Split run(P p, S s, const std::string& text, const std::vector<size_t>& cuts) {
  ReasoningSplitter sp(p, s);
  Split out;
  size_t from = 0;
  auto add = [&](const ReasoningSplitter::Delta& d) {
    out.reasoning += d.reasoning;
    out.content += d.content;
  };
  for (size_t c : cuts) {
    add(sp.push(text.substr(from, c - from)));
    from = c;
  }
  add(sp.push(text.substr(from)));
  add(sp.flush());
  out.has_reasoning = sp.has_reasoning();
  return out;
}

// Every cutting into two and three pieces, and one byte at a time, give `want`.
void expect_every_cutting(P p, S s, const std::string& text, const Split& want) {
  std::vector<std::vector<size_t>> cuttings = {{}};
  for (size_t i = 0; i <= text.size(); ++i) {
    cuttings.push_back({i});
    for (size_t j = i; j <= text.size(); ++j) cuttings.push_back({i, j});
  }
  std::vector<size_t> bytes;
  for (size_t i = 1; i < text.size(); ++i) bytes.push_back(i);
  cuttings.push_back(bytes);
  for (const auto& cuts : cuttings) {
    const Split got = run(p, s, text, cuts);
    ASSERT_EQ(got.reasoning, want.reasoning) << text << " cut " << ::testing::PrintToString(cuts);
    ASSERT_EQ(got.content, want.content) << text << " cut " << ::testing::PrintToString(cuts);
    ASSERT_EQ(got.has_reasoning, want.has_reasoning) << text;
  }
}

TEST(ReasoningSplitter, Qwen3ThinkingThenAnswerForEveryCutting) {
  expect_every_cutting(P::qwen3, S::parser, "<think>\nAdd 2 and 3.\n</think>\n\nThe sum is 5.",
                       {"\nAdd 2 and 3.\n", "\n\nThe sum is 5.", true});
  // Whitespace before the opening tag is dropped with it; a second </think> is content.
  expect_every_cutting(P::qwen3, S::parser, "\n <think>a</think>b</think>c",
                       {"a", "b</think>c", true});
  // An empty thinking block still counts as one.
  expect_every_cutting(P::qwen3, S::parser, "<think></think>ok", {"", "ok", true});
}

TEST(ReasoningSplitter, NeverSendsPartOfATag) {
  ReasoningSplitter sp(P::qwen3, S::parser);
  auto d = sp.push("\n<thi");
  EXPECT_EQ(d.reasoning, "");
  EXPECT_EQ(d.content, "");
  d = sp.push("nk>abc</thi");  // "</thi" may be the end tag: held back
  EXPECT_EQ(d.reasoning, "abc");
  EXPECT_EQ(d.content, "");
  d = sp.push("n");
  EXPECT_EQ(d.reasoning, "");
  d = sp.push("k>\n\nX");
  EXPECT_EQ(d.reasoning, "");
  EXPECT_EQ(d.content, "\n\nX");
  d = sp.push("</think>");  // after the thinking every tag is text
  EXPECT_EQ(d.content, "</think>");
  // "</th" followed by something else was text of the thinking all along.
  ReasoningSplitter sp2(P::deepseek_r1, S::open);
  EXPECT_EQ(sp2.push("a</th").reasoning, "a");
  EXPECT_EQ(sp2.push("e end").reasoning, "</the end");
}

TEST(ReasoningSplitter, MissingStartTagWhenTheTemplateOpenedIt) {
  // DeepSeek-R1: everything before </think> is reasoning, with or without a <think> of its own.
  expect_every_cutting(P::deepseek_r1, S::parser, "Let me see.\n</think>\n\n42",
                       {"Let me see.\n", "\n\n42", true});
  expect_every_cutting(P::deepseek_r1, S::open, "<think>\nx</think>y", {"\nx", "y", true});
  // Qwen3 whose prompt ends with <think>\n (thinking-only templates): the same.
  expect_every_cutting(P::qwen3, S::open, "step 1.</think>done", {"step 1.", "done", true});
  // A prompt whose thinking is already closed (enable_thinking false): all content.
  expect_every_cutting(P::deepseek_r1, S::closed, "a</think>b", {"", "a</think>b", false});
}

TEST(ReasoningSplitter, NoThinkingIsAllContent) {
  expect_every_cutting(P::qwen3, S::parser, "Hello, 5.", {"", "Hello, 5.", false});
  // A tag that is not at the start does not open thinking.
  expect_every_cutting(P::qwen3, S::parser, "So <think>x</think> y",
                       {"", "So <think>x</think> y", false});
  expect_every_cutting(P::none, S::open, "<think>a</think>b", {"", "<think>a</think>b", false});
  // A text that ends while it may still be <think> is that text.
  expect_every_cutting(P::qwen3, S::parser, " <thin", {"", " <thin", false});
  expect_every_cutting(P::qwen3, S::parser, "\n\n", {"", "\n\n", false});
  expect_every_cutting(P::qwen3, S::parser, "", {"", "", false});
}

TEST(ReasoningSplitter, UnterminatedThinkingIsAllReasoning) {
  expect_every_cutting(P::qwen3, S::parser, "<think>abc</th", {"abc</th", "", true});
  expect_every_cutting(P::deepseek_r1, S::parser, "still thinking", {"still thinking", "", true});
  expect_every_cutting(P::deepseek_r1, S::parser, "", {"", "", true});
  expect_every_cutting(P::deepseek_r1, S::parser, " <thi", {" <thi", "", true});
}

TEST(ReasoningSplitter, MultiByteTextAroundTags) {
  // "é" and "€" next to the tags: tags are ASCII, so a held-back tag never splits a character.
  expect_every_cutting(P::qwen3, S::parser, "<think>\xC3\xA9</think>\xE2\x82\xAC",
                       {"\xC3\xA9", "\xE2\x82\xAC", true});
}

TEST(ThinkStart, ReadsOnlyTheEndOfThePrompt) {
  EXPECT_EQ(think_start("<|im_start|>assistant\n<think>\n"), S::open);  // QwQ, R1, Qwen3-2507
  EXPECT_EQ(think_start("<｜Assistant｜><think>"), S::open);
  EXPECT_EQ(think_start("<|im_start|>assistant\n<think>\n\n</think>\n\n"), S::closed);
  EXPECT_EQ(think_start("<|im_start|>assistant\n"), S::parser);
  // A tag inside a message is not where the generation starts.
  EXPECT_EQ(think_start("user: <think>\n<|im_end|>\n<|im_start|>assistant\n"), S::parser);
  EXPECT_EQ(think_start(""), S::parser);
}

TEST(ReasoningParserNames, DefaultsPerFamilyAndNames) {
  EXPECT_EQ(default_reasoning_parser("{% if enable_thinking is defined %}"), P::qwen3);
  EXPECT_EQ(default_reasoning_parser("{{'<｜Assistant｜><think>\\n'}}"), P::deepseek_r1);
  EXPECT_EQ(default_reasoning_parser("<|im_start|>assistant\n<think>\n"), P::deepseek_r1);  // QwQ
  EXPECT_EQ(default_reasoning_parser("<|im_start|>assistant\n"), P::none);
  EXPECT_EQ(default_reasoning_parser(""), P::none);
  for (P p : {P::none, P::qwen3, P::deepseek_r1})
    EXPECT_EQ(parse_reasoning_parser(reasoning_parser_name(p)), p);
  EXPECT_THROW(parse_reasoning_parser("deepseek-r1"), Error);
}

// ---- responses built from events -------------------------------------------------------------

std::vector<json> chunks_of(const std::string& sse) {
  std::vector<json> out;
  size_t from = 0, cut;
  while ((cut = sse.find("\n\n", from)) != std::string::npos) {
    std::string block = sse.substr(from, cut - from);
    from = cut + 2;
    EXPECT_EQ(block.rfind("data: ", 0), 0u) << block;
    if (block != "data: [DONE]") out.push_back(json::parse(block.substr(6)));
  }
  return out;
}

Event content_event(const std::string& text) {
  Event e{Event::Kind::content};
  e.text = text;
  return e;
}

Event done_event(const char* finish_reason) {
  Event e{Event::Kind::done};
  e.finish_reason = finish_reason;
  e.stop_reason = StopReason::eos;
  e.prompt_tokens = 7;
  e.tokens_per_worker = {9};
  return e;
}

ResponseMeta plain_meta(P parser, S start, Endpoint ep = Endpoint::chat) {
  ResponseMeta m;
  m.id = "chatcmpl-1";
  m.endpoint = ep;
  m.model = "m";
  m.worker_names = {"assistant"};
  m.reasoning_parser = parser;
  m.think_start = start;
  m.hogwild_reasoning = true;
  return m;
}

// Streams `pieces` as content events then a done event; returns the chunks' deltas joined.
struct Streamed {
  std::string reasoning, content;
  std::vector<json> chunks;
  json response;
};
Streamed stream(ResponseMeta meta, const std::vector<std::string>& pieces, const char* finish) {
  ResponseBuilder b(std::move(meta));
  Streamed s;
  std::string sse = b.stream_start();
  for (const auto& p : pieces) sse += b.add(content_event(p));
  sse += b.add(done_event(finish)) + b.stream_end();
  s.chunks = chunks_of(sse);
  for (const json& c : s.chunks) {
    if (c["choices"].empty()) continue;
    const json& ch = c["choices"][0];
    const json& d = ch.contains("delta") ? ch["delta"] : json::object();
    if (d.contains("reasoning_content")) s.reasoning += d["reasoning_content"].get<std::string>();
    if (d.contains("content")) s.content += d["content"].get<std::string>();
    if (ch.contains("text")) s.content += ch["text"].get<std::string>();
  }
  s.response = b.response();
  return s;
}

TEST(ReasoningResponse, PlainChatMessageAndStreamDeltas) {
  const std::vector<std::string> pieces = {"<thi", "nk>\nab", "c</th", "ink>\n\nThe ans", "wer."};
  const Streamed s = stream(plain_meta(P::qwen3, S::parser), pieces, "stop");
  EXPECT_EQ(s.reasoning, "\nabc");
  EXPECT_EQ(s.content, "\n\nThe answer.");
  const json& msg = s.response["choices"][0]["message"];
  EXPECT_EQ(msg["reasoning_content"], "\nabc");
  EXPECT_EQ(msg["content"], "\n\nThe answer.");
  EXPECT_EQ(s.response["choices"][0]["finish_reason"], "stop");
  // The chunks in order: role, reasoning "\nab", reasoning "c", content, content, final chunk.
  ASSERT_EQ(s.chunks.size(), 6u);
  EXPECT_EQ(s.chunks[1]["choices"][0]["delta"], json({{"reasoning_content", "\nab"}}));
  EXPECT_EQ(s.chunks[2]["choices"][0]["delta"], json({{"reasoning_content", "c"}}));
  EXPECT_EQ(s.chunks[3]["choices"][0]["delta"], json({{"content", "\n\nThe ans"}}));
  EXPECT_EQ(s.chunks[4]["choices"][0]["delta"], json({{"content", "wer."}}));
  EXPECT_EQ(s.chunks[5]["choices"][0]["finish_reason"], "stop");
}

TEST(ReasoningResponse, EndedInsideTheThinkingHasNoContent) {
  const Streamed s = stream(plain_meta(P::deepseek_r1, S::open), {"Hmm, 2", " + 3 </th"}, "length");
  EXPECT_EQ(s.reasoning, "Hmm, 2 + 3 </th");  // the held-back "</th" comes at the end
  EXPECT_EQ(s.content, "");
  const json& msg = s.response["choices"][0]["message"];
  EXPECT_EQ(msg["reasoning_content"], "Hmm, 2 + 3 </th");
  EXPECT_TRUE(msg["content"].is_null());
}

TEST(ReasoningResponse, NoThinkingNoParserAndIncludeReasoningOff) {
  Streamed s = stream(plain_meta(P::qwen3, S::parser), {"Hi", " there"}, "stop");
  EXPECT_TRUE(s.response["choices"][0]["message"]["reasoning_content"].is_null());
  EXPECT_EQ(s.response["choices"][0]["message"]["content"], "Hi there");
  EXPECT_EQ(s.content, "Hi there");

  s = stream(plain_meta(P::none, S::open), {"<think>a</think>b"}, "stop");
  EXPECT_FALSE(s.response["choices"][0]["message"].contains("reasoning_content"));
  EXPECT_EQ(s.response["choices"][0]["message"]["content"], "<think>a</think>b");

  ResponseMeta off = plain_meta(P::qwen3, S::parser);
  off.include_reasoning = false;  // split off and dropped
  s = stream(off, {"<think>a</th", "ink>b"}, "stop");
  EXPECT_EQ(s.reasoning, "");
  EXPECT_EQ(s.content, "b");
  EXPECT_TRUE(s.response["choices"][0]["message"]["reasoning_content"].is_null());
  EXPECT_EQ(s.response["choices"][0]["message"]["content"], "b");

  // /v1/completions is plain text whatever the parser.
  s = stream(plain_meta(P::qwen3, S::parser, Endpoint::completion), {"<think>a</think>b"}, "stop");
  EXPECT_EQ(s.content, "<think>a</think>b");
  EXPECT_EQ(s.response["choices"][0]["text"], "<think>a</think>b");
}

Event step_event(Event::Kind k, int worker, int step, const std::string& text) {
  Event e{k};
  e.worker = worker;
  e.step = step;
  e.text = text;
  return e;
}

TEST(ReasoningResponse, HogwildStepsAreTheReasoningAndTheAnswerTheContent) {
  ResponseMeta m = plain_meta(P::qwen3, S::parser);
  m.hogwild = true;
  m.worker_names = {"Alice", "Bob"};
  using K = Event::Kind;
  const std::vector<Event> events = {
      step_event(K::step_start, 0, 1, "**Alice [1]:** "),
      step_event(K::step_start, 1, 1, "**Bob [1]:** "),
      step_event(K::token, 0, 1, "2 + 3 = 5."),
      step_event(K::token, 1, 1, "I check"),
      step_event(K::token, 0, 1, "\n\n"),
      step_event(K::step_end, 0, 1, "**Alice [1]:** 2 + 3 = 5.\n\n"),
      step_event(K::step_start, 0, 2, "**Alice [2]:** "),  // opened, nothing written: left out
      step_event(K::token, 1, 1, " it."),
      content_event("5"),
      done_event("stop")};
  ResponseBuilder b(m);
  std::string sse = b.stream_start();
  for (const Event& e : events) sse += b.add(e);
  std::vector<std::string> reasoning, content;
  for (const json& c : chunks_of(sse)) {
    if (c["choices"].empty()) continue;
    const json& d = c["choices"][0]["delta"];
    if (d.contains("reasoning_content")) reasoning.push_back(d["reasoning_content"]);
    if (d.contains("content") && d["content"] != "") content.push_back(d["content"]);
  }
  EXPECT_EQ(reasoning, (std::vector<std::string>{"**Alice [1]:** 2 + 3 = 5.\n\n",
                                                 "**Bob [1]:** I check it."}));
  EXPECT_EQ(content, std::vector<std::string>{"5"});
  const json msg = b.response()["choices"][0]["message"];
  EXPECT_EQ(msg["reasoning_content"], "**Alice [1]:** 2 + 3 = 5.\n\n**Bob [1]:** I check it.");
  EXPECT_EQ(msg["content"], "5");
}

TEST(ReasoningResponse, HogwildWithoutAnAnswerHasNullContent) {
  ResponseMeta m = plain_meta(P::none, S::parser);
  m.hogwild = true;
  m.worker_names = {"Alice"};
  ResponseBuilder b(m);
  b.add(step_event(Event::Kind::step_start, 0, 1, "**Alice [1]:** "));
  b.add(step_event(Event::Kind::token, 0, 1, "Let"));
  const std::string tail = b.add(done_event("length"));
  EXPECT_NE(tail.find("\"reasoning_content\":\"**Alice [1]:** Let\""), std::string::npos) << tail;
  const json msg = b.response()["choices"][0]["message"];
  EXPECT_EQ(msg["reasoning_content"], "**Alice [1]:** Let");
  EXPECT_TRUE(msg["content"].is_null());
}

// ---- request fields -----------------------------------------------------------------------------

TEST(ReasoningRequest, IncludeReasoningAndTheMethodsFields) {
  const std::string chat = R"({"messages":[{"role":"user","content":"a"}],)";
  EXPECT_TRUE(parse_completion_request(chat + "\"n\":1}", Endpoint::chat, "m").include_reasoning);
  EXPECT_FALSE(parse_completion_request(chat + "\"include_reasoning\":false}", Endpoint::chat, "m")
                   .include_reasoning);
  auto param = [](const std::string& body, Endpoint ep) {
    try {
      parse_completion_request(body, ep, "m");
    } catch (const ApiError& e) {
      return e.status == 400 ? e.param : "status " + std::to_string(e.status);
    }
    return std::string("accepted");
  };
  EXPECT_EQ(param(chat + "\"include_reasoning\":1}", Endpoint::chat), "include_reasoning");
  EXPECT_EQ(param(R"({"prompt":"a","include_reasoning":true})", Endpoint::completion),
            "include_reasoning");
  // Self-consistency and Skeleton-of-Thought.
  CompletionRequest r = parse_completion_request(
      chat + R"("hogwild":{"workers":5,"layout":"independent"}})", Endpoint::chat, "m");
  EXPECT_EQ(r.hogwild->layout, Layout::independent);
  EXPECT_FALSE(r.hogwild->skeleton);
  r = parse_completion_request(chat + R"("hogwild":{"workers":3,"skeleton":true}})", Endpoint::chat,
                               "m");
  EXPECT_EQ(r.hogwild->layout, Layout::independent);
  EXPECT_TRUE(r.hogwild->skeleton);
  EXPECT_EQ(param(chat + R"("hogwild":{"skeleton":true,"layout":"contiguous"}})", Endpoint::chat),
            "hogwild.layout");
  EXPECT_EQ(param(chat + R"("hogwild":{"skeleton":1}})", Endpoint::chat), "hogwild.skeleton");
  EXPECT_EQ(param(chat + R"("hogwild":{"method":"sot"}})", Endpoint::chat), "hogwild.method");
}

}  // namespace
}  // namespace hogwild::server
