// Conformance: the interpreter's output equals the goldens in tests/data/chat/golden.json, which
// tools/chat_golden.py made with Python jinja2 (set up as transformers renders chat templates) and
// checked against @huggingface/jinja. Model cases load the real Qwen3 / Llama 3 / DeepSeek-V3
// tokenizer_config.json copies through ChatTemplate::load.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "chat/chat_template.h"
#include "core/error.h"

namespace hogwild::chat {
namespace {

const std::string kData = std::string(HOGWILD_SOURCE_DIR) + "/tests/data/chat";

nlohmann::ordered_json read_json(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << path;
  return nlohmann::ordered_json::parse(f);
}

TEST(ChatGolden, ModelTemplatesMatchJinja2) {
  auto golden = read_json(kData + "/golden.json");
  std::map<std::string, nlohmann::ordered_json> convs;
  for (const auto& c : read_json(kData + "/conversations.json")) convs[c["name"]] = c["messages"];
  std::map<std::string, ChatTemplate> models;
  int n = 0;
  for (const auto& g : golden["model_cases"]) {
    std::string m = g["model"];
    if (!models.count(m)) models.emplace(m, ChatTemplate::load(kData + "/models/" + m));
    std::string got = models.at(m).render(convs.at(g["conversation"]),
                                          g["add_generation_prompt"].get<bool>(), g["kwargs"]);
    EXPECT_EQ(got, g["expected"].get<std::string>())
        << m << "/" << g["conversation"] << " add_generation_prompt=" << g["add_generation_prompt"]
        << " kwargs=" << g["kwargs"].dump();
    ++n;
  }
  EXPECT_EQ(n, 250);
}

TEST(ChatGolden, SnippetsMatchJinja2) {
  auto golden = read_json(kData + "/golden.json");
  auto snippets = read_json(kData + "/snippets.json");
  ASSERT_EQ(golden["snippets"].size(), snippets.size());
  for (size_t i = 0; i < snippets.size(); ++i) {
    const auto& s = snippets[i];
    const auto& g = golden["snippets"][i];
    std::string name = s["name"];
    std::string got, err;
    try {
      got =
          ChatTemplate::from_string(s["template"].get<std::string>()).render_context(s["context"]);
    } catch (const Error& e) {
      err = e.what();
    }
    if (g.contains("expected")) {
      EXPECT_EQ(err, "") << name;
      EXPECT_EQ(got, g["expected"].get<std::string>()) << name;
    } else {
      EXPECT_NE(err, "") << name << " should fail like jinja2: " << g["error"] << "; got output "
                         << got;
    }
  }
}

}  // namespace
}  // namespace hogwild::chat
