// `hogwild prompt` end to end: the subcommand (apps/hogwild/cmd_prompt.cpp) registered on a bare
// CLI11 app, output compared with the jinja2 goldens, and its error messages for bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "apps/hogwild/commands.h"
#include "core/error.h"

namespace hogwild::cli {
namespace {

const std::string kData = std::string(HOGWILD_SOURCE_DIR) + "/tests/data/chat";

// Runs `hogwild prompt ARGS...`; returns stdout, or "error: <message>" when it throws.
std::string run(std::vector<std::string> args) {
  CLI::App app;
  register_prompt(app);
  args.insert(args.begin(), {"hogwild", "prompt"});
  std::vector<const char*> argv;
  for (auto& a : args) argv.push_back(a.c_str());
  testing::internal::CaptureStdout();
  try {
    app.parse(static_cast<int>(argv.size()), const_cast<char**>(argv.data()));
  } catch (const Error& e) {
    testing::internal::GetCapturedStdout();
    return std::string("error: ") + e.what();
  }
  return testing::internal::GetCapturedStdout();
}

std::string write_tmp(const std::string& name, const std::string& text) {
  auto p = std::filesystem::temp_directory_path() / ("hogwild_prompt_" + name);
  std::ofstream(p) << text;
  return p.string();
}

nlohmann::ordered_json golden_case(const std::string& model, const std::string& conv, bool agp,
                                   const nlohmann::ordered_json& kwargs) {
  std::ifstream f(kData + "/golden.json");
  auto golden = nlohmann::ordered_json::parse(f);
  for (const auto& g : golden["model_cases"])
    if (g["model"] == model && g["conversation"] == conv && g["add_generation_prompt"] == agp &&
        g["kwargs"] == kwargs)
      return g;
  ADD_FAILURE() << "no golden for " << model << "/" << conv;
  return {};
}

std::string conversation_file(const std::string& conv) {
  std::ifstream f(kData + "/conversations.json");
  for (const auto& c : nlohmann::ordered_json::parse(f))
    if (c["name"] == conv) return write_tmp(conv + ".json", c["messages"].dump());
  ADD_FAILURE() << "no conversation " << conv;
  return "";
}

TEST(PromptCli, PrintsTheRenderedPrompt) {
  std::string msgs = conversation_file("reasoning_field_earlier");
  EXPECT_EQ(run({"-m", kData + "/models/qwen3", "--messages", msgs, "--template-kwargs",
                 R"({"enable_thinking": false})"}),
            golden_case("qwen3", "reasoning_field_earlier", true,
                        {{"enable_thinking", false}})["expected"]);
  EXPECT_EQ(
      run({"-m", kData + "/models/deepseek_v3", "--messages", msgs, "--no-generation-prompt"}),
      golden_case("deepseek_v3", "reasoning_field_earlier", false,
                  nlohmann::ordered_json::object())["expected"]);
}

TEST(PromptCli, ClearErrorsForBadInput) {
  std::string qwen = kData + "/models/qwen3";
  std::string ok = write_tmp("ok.json", R"([{"role": "user", "content": "hi"}])");
  EXPECT_EQ(run({"-m", qwen, "--messages", "/nonexistent/m.json"}),
            "error: messages file '/nonexistent/m.json' does not exist");
  // A directory where the file is expected says so (it was reported as "not valid JSON").
  EXPECT_EQ(run({"-m", qwen, "--messages", kData}),
            "error: messages file '" + kData + "' is a directory, not a file");
  // --template-name naming no template of the model is refused, not ignored.
  EXPECT_EQ(run({"-m", qwen, "--messages", ok, "--template-name", "tool_use"})
                .rfind("error: " + qwen +
                           "/tokenizer_config.json: no chat template named 'tool_use': the "
                           "model has a single template (named default); leave out --template-name",
                       0),
            0u);
  EXPECT_EQ(run({"-m", qwen, "--messages", write_tmp("obj.json", R"({"role": "user"})")})
                .rfind("error: messages file ", 0),
            0u);
  EXPECT_NE(run({"-m", qwen, "--messages", write_tmp("obj.json", R"({"role": "user"})")})
                .find("must hold a JSON list"),
            std::string::npos);
  EXPECT_NE(run({"-m", qwen, "--messages", write_tmp("bad.json", "[{")}).find("is not valid JSON"),
            std::string::npos);
  EXPECT_NE(run({"-m", qwen, "--messages", write_tmp("nums.json", "[1, 2]")}).find("every entry"),
            std::string::npos);
  EXPECT_NE(
      run({"-m", qwen, "--messages", ok, "--template-kwargs", "[1]"}).find("must be a JSON object"),
      std::string::npos);
  EXPECT_NE(run({"-m", qwen, "--messages", ok, "--template-kwargs", "{oops"})
                .find("--template-kwargs is not valid JSON"),
            std::string::npos);
  auto empty_dir = std::filesystem::temp_directory_path() / "hogwild_prompt_empty_model";
  std::filesystem::create_directories(empty_dir);
  EXPECT_NE(run({"-m", empty_dir.string(), "--messages", ok}).find("has no chat template"),
            std::string::npos);
  EXPECT_NE(run({"-m", "/nonexistent_model_dir", "--messages", ok}).find("is not a directory"),
            std::string::npos);
}

}  // namespace
}  // namespace hogwild::cli
