// The collaboration score (eval/judge.h): the score in a reply, the endpoint of a --judge-url,
// and a request to a fake OpenAI-compatible server started here: its path, model, messages,
// temperature and bearer key, the parsed score, and every failure (HTTP error, a reply that is
// not a chat completion, no score, no server) reported without an exception.
#include <gtest/gtest.h>

#include "core/error.h"
#include "eval/judge.h"
#include "tests/eval/fake_judge.h"

namespace hogwild::eval {
namespace {

TEST(Judge, ScoreInReply) {
  EXPECT_EQ(parse_judge_score("They split the work.\nScore: 5"), 5);
  EXPECT_EQ(parse_judge_score("**Score:** 4\n"), 4);
  EXPECT_EQ(parse_judge_score("score: 2 (weak)"), 2);
  EXPECT_EQ(parse_judge_score("Score: 3 at first... Final score: 6"), 6);  // the last one
  EXPECT_EQ(parse_judge_score("Score: 7"), std::nullopt);
  EXPECT_EQ(parse_judge_score("Score: 0"), std::nullopt);
  EXPECT_EQ(parse_judge_score("Score: 4.5"), std::nullopt);
  EXPECT_EQ(parse_judge_score("Score: 12"), std::nullopt);
  EXPECT_EQ(parse_judge_score("I would give it a 5."), std::nullopt);
  EXPECT_EQ(parse_judge_score(""), std::nullopt);
}

TEST(Judge, Endpoint) {
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(judge_endpoint("http://127.0.0.1:8000"),
            (P{"http://127.0.0.1:8000", "/v1/chat/completions"}));
  EXPECT_EQ(judge_endpoint("http://h:1/v1"), (P{"http://h:1", "/v1/chat/completions"}));
  EXPECT_EQ(judge_endpoint("https://api.example.org/v1/"),
            (P{"https://api.example.org", "/v1/chat/completions"}));
  EXPECT_EQ(judge_endpoint("http://h/proxy/v1/chat/completions"),
            (P{"http://h", "/proxy/v1/chat/completions"}));
  EXPECT_EQ(judge_endpoint("http://h/api"), (P{"http://h", "/api/v1/chat/completions"}));
  EXPECT_THROW(judge_endpoint("127.0.0.1:8000"), Error);
  EXPECT_THROW(judge_endpoint("ftp://h/v1"), Error);
  EXPECT_THROW(judge_endpoint("http:///v1"), Error);
  EXPECT_THROW(Judge(JudgeOptions{"http://h", "", "", 16, 5}), Error);  // no model
}

TEST(Judge, RequestAndReplyAgainstAFakeEndpoint) {
  testing::FakeJudge fake;
  fake.reply("Alice took the sum while Bob checked it.\n\n**Score:** 5");
  Judge judge({fake.url() + "/v1", "judge-7b", "sekret", 200, 30});
  const JudgeScore s = judge.score("What is 2 + 3?", "**Alice [1]:** 2 + 3 = 5.\n\n", 2);
  EXPECT_EQ(s.error, "");
  EXPECT_EQ(s.score, 5);
  EXPECT_EQ(s.reply, "Alice took the sum while Bob checked it.\n\n**Score:** 5");
  const auto seen = fake.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].path, "/v1/chat/completions");
  EXPECT_EQ(seen[0].authorization, "Bearer sekret");
  const nlohmann::json& b = seen[0].body;
  EXPECT_EQ(b["model"], "judge-7b");
  EXPECT_EQ(b["temperature"], 0);
  EXPECT_EQ(b["max_tokens"], 200);
  ASSERT_EQ(b["messages"].size(), 2u);
  EXPECT_EQ(b["messages"][0]["role"], "system");
  EXPECT_EQ(b["messages"][0]["content"], judge_rubric());
  EXPECT_EQ(b["messages"][1]["role"], "user");
  EXPECT_EQ(b["messages"][1]["content"],
            judge_request_text("What is 2 + 3?", "**Alice [1]:** 2 + 3 = 5.\n\n", 2));
  const std::string user = b["messages"][1]["content"];
  EXPECT_NE(user.find("What is 2 + 3?"), std::string::npos);
  EXPECT_NE(user.find("**Alice [1]:** 2 + 3 = 5."), std::string::npos);
  EXPECT_NE(user.find("the 2 workers"), std::string::npos);
  for (int level = 1; level <= 6; ++level)
    EXPECT_NE(judge_rubric().find(std::to_string(level) + " - "), std::string::npos) << level;
}

TEST(Judge, FailuresAreReportedNotThrown) {
  testing::FakeJudge fake;
  Judge judge({fake.url(), "m", "", 64, 30});
  fake.reply_raw(500, R"({"error": "overloaded"})");
  JudgeScore s = judge.score("p", "t", 2);
  EXPECT_FALSE(s.score);
  EXPECT_NE(s.error.find("HTTP 500"), std::string::npos) << s.error;
  EXPECT_NE(s.error.find("overloaded"), std::string::npos) << s.error;
  fake.reply_raw(200, "not json");
  s = judge.score("p", "t", 2);
  EXPECT_FALSE(s.score);
  EXPECT_NE(s.error.find("not a chat completion"), std::string::npos) << s.error;
  fake.reply("They work well together.");
  s = judge.score("p", "t", 2);
  EXPECT_FALSE(s.score);
  EXPECT_EQ(s.reply, "They work well together.");
  EXPECT_NE(s.error.find("no \"Score: N\""), std::string::npos) << s.error;
  EXPECT_EQ(fake.seen().size(), 3u);
  EXPECT_EQ(fake.seen()[0].authorization, "");  // no key, no header
  // Nothing listening: a connection error.
  std::string url = fake.url();
  {
    testing::FakeJudge other;
    url = other.url();
  }
  Judge gone({url, "m", "", 64, 5});
  s = gone.score("p", "t", 2);
  EXPECT_FALSE(s.score);
  EXPECT_NE(s.error.find("judge http://127.0.0.1:"), std::string::npos) << s.error;
}

}  // namespace
}  // namespace hogwild::eval
