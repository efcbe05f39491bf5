// The table of ranges of a request (core/request_fields.h), field by field, through every surface
// that takes the field: the lowest and the highest value accepted and the first value refused on
// each side, with the sentence of the refusal. The CLI runs the `hogwild` binary (run, eval,
// generate, collab, bench); the HTTP API runs the server's JSON mapping (parse_completion_request,
// whose ApiError becomes the 400). The same mistake is the same sentence on both.
//
// A value the CLI accepts reaches the first step after every check: `run` then fails on its --json
// naming a directory, `eval` on a dataset that does not exist, `generate` on a model directory
// that does not exist; so "accepted" is that sentinel error and none of the table's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/request.h"

namespace hogwild::server {
namespace {

namespace fs = std::filesystem;

const std::string kBin = std::string(HOGWILD_BINARY_DIR) + "/hogwild";
const std::string kModel = std::string(HOGWILD_SOURCE_DIR) + "/models/packs-collab";

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// `hogwild <args>`: its exit status and what it wrote to stderr and stdout.
struct Cli {
  int code;
  std::string out;
};
Cli hogwild(const std::string& args) {
  const std::string file = testing::TempDir() + "/request_table_" + std::to_string(getpid());
  const int rc = std::system((kBin + " " + args + " >" + file + " 2>&1 </dev/null").c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, slurp(file)};
}

std::string with_value(std::string text, const std::string& value) {
  const size_t at = text.find("{}");
  return text.replace(at, 2, value);
}

// One value of one field on one surface. `refused`: the sentence of its refusal; "" = accepted.
struct Case {
  std::string value, refused;
};

// A field on the surfaces that take it: a command line and JSON members of a /v1/completions
// body, each with {} for the value ("" = the surface has no such field).
struct Row {
  std::string field, cli, api;
  std::vector<Case> cases;
};

std::string dir_sentinel() {
  static const std::string dir = [] {
    const std::string d = testing::TempDir() + "/request_table_dir";
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

// `hogwild run` on the demo model: accepted values end at its --json naming a directory.
std::string run_cmd(const std::string& flags) {
  return "run -m " + kModel + " --json " + dir_sentinel() + " " + flags + " x";
}
const char* kRunAccepted = "is a directory; give a file name inside it";

// `hogwild eval`: accepted values end at the dataset, which does not exist.
std::string eval_cmd(const std::string& flags) {
  return "eval -m " + kModel + " --dataset /nonexistent/problems.jsonl --out " +
         testing::TempDir() + "/request_table_eval " + flags;
}
const char* kEvalAccepted = "/nonexistent/problems.jsonl";

// `hogwild generate`: accepted values end at the model directory, which does not exist.
std::string generate_cmd(const std::string& flags) {
  return "generate -m /nonexistent/model --ids 1 " + flags;
}
const char* kGenerateAccepted = "model directory '/nonexistent/model' does not exist";

const std::string k256(256, 'a'), k257(257, 'a');

std::vector<Row> rows() {
  return {
      // Workers of the independent layout (self-consistency samples): 1..64.
      {"workers",
       run_cmd("--layout independent -w {}"),
       R"("hogwild":{"layout":"independent","workers":{}})",
       {{"1", ""},
        {"64", ""},
        {"0", "workers is 0; it must be in 1..64 workers"},
        {"65", "workers is 65; it must be in 1..64 workers"}}},
      {"workers",
       eval_cmd("--method self-consistency -w {}"),
       "",
       {{"1", ""},
        {"64", ""},
        {"0", "workers is 0; it must be in 1..64 workers"},
        {"65", "workers is 65; it must be in 1..64 workers"}}},
      {"workers",
       "bench --device cpu -p tiny -c 8 -r 1 --json-file /proc/x -w {}",
       "",
       {{"0", "workers is 0; it must be in 1..64 workers"},
        {"65", "workers is 65; it must be in 1..64 workers"}}},
      // Workers that share a cache: the names of the formatting (the demo model's own, 8).
      {"workers",
       run_cmd("-w {}"),
       "",
       {{"1", ""},
        {"8", ""},
        {"0", "workers is 0; the formatting 'packs-collab' names 8 workers: give 1..8"},
        {"9", "workers is 9; the formatting 'packs-collab' names 8 workers: give 1..8"}}},
      {"budget",
       run_cmd("--budget {}"),
       R"("hogwild":{"budget":{}})",
       {{"0", ""},
        {"1000000", ""},
        {"-1", "budget is -1; it must be in 0..1000000 serial steps (0 = until an answer)"},
        {"1000001",
         "budget is 1000001; it must be in 0..1000000 serial steps (0 = until an answer)"}}},
      {"snapshot",
       run_cmd("--snapshots {}"),
       "",
       {{"1", ""},
        {"1000000", ""},
        {"0", "snapshot is 0; it must be in 1..1000000 serial steps"},
        {"1000001", "snapshot is 1000001; it must be in 1..1000000 serial steps"}}},
      {"snapshot",
       run_cmd("--budget 5 --snapshots {}"),
       "",
       {{"5", ""},
        {"6",
         "snapshot is 6, beyond the budget of 5 serial steps where the run ends; give snapshots "
         "in 1..5 or raise the budget"}}},
      {"snapshot",
       eval_cmd("--budgets {}"),
       "",
       {{"1", ""},
        {"1000000", ""},
        {"0", "snapshot is 0; it must be in 1..1000000 serial steps"},
        {"1000001", "snapshot is 1000001; it must be in 1..1000000 serial steps"}}},
      {"collab_every",
       run_cmd("--collab-every {}"),
       R"("hogwild":{"collab_every":{}})",
       {{"-1", ""},
        {"1000000", ""},
        {"-2",
         "collab_every is -2; it must be in -1..1000000 generated tokens (0 = no collaboration "
         "check, -1 = the formatting's)"},
        {"1000001",
         "collab_every is 1000001; it must be in -1..1000000 generated tokens (0 = no "
         "collaboration check, -1 = the formatting's)"}}},
      {"collab_every",
       eval_cmd("--collab-every {}"),
       "",
       {{"-1", ""},
        {"1000000", ""},
        {"-2",
         "collab_every is -2; it must be in -1..1000000 generated tokens (0 = no collaboration "
         "check, -1 = the formatting's)"}}},
      // max_context: the table's 0.., then the model's own context (2048 for the demo model).
      {"kv_budget",
       run_cmd("--kv-budget {}"),
       R"("hogwild":{"kv_budget":{}})",
       {{"0", ""},
        {"2147483647", ""},
        {"-1",
         "kv_budget is -1; it must be in 0..2147483647 tokens of the shared history kept in "
         "attention (0 = unlimited)"},
        {"2147483648",
         "kv_budget is 2147483648; it must be in 0..2147483647 tokens of the shared history kept "
         "in attention (0 = unlimited)"}}},
      {"kv_budget",
       eval_cmd("--kv-budget {}"),
       "",
       {{"0", ""},
        {"2147483647", ""},
        {"-1",
         "kv_budget is -1; it must be in 0..2147483647 tokens of the shared history kept in "
         "attention (0 = unlimited)"}}},
      {"kv_chunk",
       run_cmd("--kv-chunk {}"),
       "",
       {{"0", ""},
        {"16",
         "kv_chunk is 16, but there is no kv_budget: chunks are what a budget forgets; give a "
         "kv_budget, or drop kv_chunk"}}},
      {"kv_chunk",
       run_cmd("--kv-budget 100000 --kv-chunk {}"),
       "",
       {{"0", ""},
        {"4096", ""},
        {"-1",
         "kv_chunk is -1; it must be in 0..4096 tokens forgotten together (0 = the default, 16)"},
        {"4097",
         "kv_chunk is 4097; it must be in 0..4096 tokens forgotten together (0 = the default, "
         "16)"}}},
      {"kv_chunk",
       eval_cmd("--kv-budget 100000 --kv-chunk {}"),
       "",
       {{"0", ""},
        {"4096", ""},
        {"-1",
         "kv_chunk is -1; it must be in 0..4096 tokens forgotten together (0 = the default, 16)"}}},
      // kv_policy: a name, with a kv_budget; summarise takes no kv_chunk.
      {"kv_policy",
       run_cmd("--kv-budget 100000 --kv-policy {}"),
       R"("hogwild":{"kv_budget":100000,"kv_policy":"{}"})",
       {{"evict", ""},
        {"summarise", ""},
        {"summarize", ""},
        {"drop",
         "kv_policy is 'drop'; use evict (forget the least attended chunks of the history) or "
         "summarise (a worker writes a summary step and the steps it sums up are forgotten)"}}},
      {"kv_policy",
       run_cmd("--kv-policy {}"),
       R"("hogwild":{"kv_policy":"{}"})",
       {{"evict", ""},
        {"summarise",
         "kv_policy is summarise, but there is no kv_budget: the policy says what happens at the "
         "budget; give a kv_budget, or drop kv_policy"}}},
      {"kv_policy",
       eval_cmd("--kv-budget 100000 --kv-policy {}"),
       "",
       {{"summarise", ""},
        {"drop",
         "kv_policy is 'drop'; use evict (forget the least attended chunks of the history) or "
         "summarise (a worker writes a summary step and the steps it sums up are forgotten)"}}},
      {"kv_chunk",
       run_cmd("--kv-budget 100000 --kv-policy summarise --kv-chunk {}"),
       "",
       {{"0", ""},
        {"16",
         "kv_chunk is 16, but kv_policy summarise drops whole steps, not chunks; drop kv_chunk, "
         "or use kv_policy evict"}}},
      // kv_redundancy: a weight in [0, 1], with a kv_budget and the evict policy.
      {"kv_redundancy",
       run_cmd("--kv-budget 100000 --kv-redundancy {}"),
       R"("hogwild":{"kv_budget":100000,"kv_redundancy":{}})",
       {{"0", ""},
        {"0.9", ""},
        {"1", ""},
        {"-0.5",
         "kv_redundancy is -0.5; it must be in [0, 1] (the weight of key redundancy against "
         "attention in what evict forgets, R-KV's 1 - lambda; 0 = off)"},
        {"1.5",
         "kv_redundancy is 1.5; it must be in [0, 1] (the weight of key redundancy against "
         "attention in what evict forgets, R-KV's 1 - lambda; 0 = off)"}}},
      {"kv_redundancy",
       run_cmd("--kv-redundancy {}"),
       R"("hogwild":{"kv_redundancy":{}})",
       {{"0", ""},
        {"0.9",
         "kv_redundancy is 0.9, but there is no kv_budget: redundancy ranks what a budget "
         "forgets; give a kv_budget, or drop kv_redundancy"}}},
      {"kv_redundancy",
       eval_cmd("--kv-budget 100000 --kv-policy summarise --kv-redundancy {}"),
       R"("hogwild":{"kv_budget":100000,"kv_policy":"summarise","kv_redundancy":{}})",
       {{"0", ""},
        {"0.9",
         "kv_redundancy is 0.9, but kv_policy summarise forgets what a summary sums up, not the "
         "least useful chunks; drop kv_redundancy, or use kv_policy evict"}}},
      {"max_context",
       run_cmd("-c {}"),
       "",
       {{"0", ""},
        {"2048", ""},
        {"-1",
         "max_context is -1; it must be in 0..2147483647 tokens (0 = the model's context "
         "length)"},
        {"2049",
         "max_context is 2049, beyond the model's context of 2048 tokens "
         "(max_position_embeddings in config.json): positions past it are untrained; give "
         "0..2048"}}},
      {"max_tokens",
       run_cmd("--n-predict {}"),
       "",
       {{"0", ""},
        {"1048576", ""},
        {"-1",
         "max_tokens is -1; it must be in 0..1048576 generated tokens per worker (0 = no "
         "limit)"},
        {"1048577",
         "max_tokens is 1048577; it must be in 0..1048576 generated tokens per worker "
         "(0 = no limit)"}}},
      {"max_tokens",
       generate_cmd("-n {}"),
       R"("max_tokens":{})",
       {{"1", ""},
        {"1048576", ""},
        {"-1",
         "max_tokens is -1; it must be in 0..1048576 generated tokens per worker (0 = no "
         "limit)"},
        {"1048577",
         "max_tokens is 1048577; it must be in 0..1048576 generated tokens per worker "
         "(0 = no limit)"}}},
      // The API has no "0 = no limit": leaving max_tokens out is (as in OpenAI's API).
      {"max_tokens",
       "",
       R"("max_tokens":{})",
       {{"0", "max_tokens is 0; leave it out for no limit, or give 1..1048576 tokens"}}},
      {"seed",
       run_cmd("--seed {}"),
       R"("seed":{})",
       {{"-1", ""},
        {"9223372036854775807", ""},
        {"-2", "seed is -2; it must be in -1..9223372036854775807 (-1 = a random seed)"}}},
      // Beyond 64 bits on the CLI; the API's JSON reader says "'seed' is too large".
      {"seed",
       run_cmd("--seed {}"),
       "",
       {{"9223372036854775808",
         "seed is 9223372036854775808; it must be in -1..9223372036854775807 (-1 = a random "
         "seed)"}}},
      {"seed",
       eval_cmd("--seed {}"),
       "",
       {{"-1", ""},
        {"-2", "seed is -2; it must be in -1..9223372036854775807 (-1 = a random seed)"}}},
      // The seed of a reproducible artefact (a problem pack, a model) has no random value.
      {"seed",
       "collab problems --count 1 --seed {}",
       "",
       {{"0", ""},
        {"9223372036854775807", ""},
        {"-1",
         "seed is -1; it must be in 0..9223372036854775807 (the same seed gives the same "
         "output)"}}},
      {"temperature",
       run_cmd("--temperature {}"),
       R"("temperature":{})",
       {{"0", ""},
        {"2", ""},
        {"-5e-324", "temperature is -5e-324; it must be in [0, 2] (0 = greedy)"},
        {"2.0000000000000004",
         "temperature is 2.0000000000000004; it must be in [0, 2] (0 = greedy)"}}},
      {"temperature",
       eval_cmd("--temperature {}"),
       "",
       {{"0", ""},
        {"2", ""},
        {"2.0000000000000004",
         "temperature is 2.0000000000000004; it must be in [0, 2] (0 = greedy)"}}},
      {"top_k",
       run_cmd("--top-k {}"),
       R"("top_k":{})",
       {{"0", ""},
        {"2147483647", ""},
        {"2147483648", "top_k is 2147483648; it must be in 0..2147483647 tokens (0 = off)"}}},
      // -1 is off on the API, as OpenAI-style clients send it; below it is refused.
      {"top_k",
       run_cmd("--top-k {}"),
       "",
       {{"-1", "top_k is -1; it must be in 0..2147483647 tokens (0 = off)"}}},
      {"top_k",
       "",
       R"("top_k":{})",
       {{"-1", ""}, {"-2", "top_k is -2; it must be in 0..2147483647 tokens (0 = off)"}}},
      // Open below: 0 is refused; the smallest positive that stays positive in 32 bits is taken.
      {"top_p",
       run_cmd("--top-p {}"),
       R"("top_p":{})",
       {{"1e-30", ""},
        {"1", ""},
        {"0", "top_p is 0; it must be in (0, 1] (1 = off)"},
        {"1.0000000000000002", "top_p is 1.0000000000000002; it must be in (0, 1] (1 = off)"}}},
      {"min_p",
       run_cmd("--min-p {}"),
       R"("min_p":{})",
       {{"0", ""},
        {"1", ""},
        {"-5e-324", "min_p is -5e-324; it must be in [0, 1] (0 = off)"},
        {"1.0000000000000002", "min_p is 1.0000000000000002; it must be in [0, 1] (0 = off)"}}},
      {"repetition_penalty",
       run_cmd("--repetition-penalty {}"),
       R"("repetition_penalty":{})",
       {{"1e-30", ""},
        {"10", ""},
        {"0", "repetition_penalty is 0; it must be in (0, 10] (1 = off)"},
        {"10.000000000000002",
         "repetition_penalty is 10.000000000000002; it must be in (0, 10] (1 = off)"}}},
      {"stop",
       generate_cmd("--stop '{}'"),
       R"("stop":["{}"])",
       {{"a", ""},
        {k256, ""},
        {"", "a stop string is empty; it would stop at once: give some text"},
        {k257, "a stop string has 257 bytes; it must be in 1..256 bytes per stop string"}}},
  };
}

// The sentinel a CLI command reaches once every check has passed.
const char* accepted_sentinel(const std::string& cli) {
  if (cli.rfind("run ", 0) == 0) return kRunAccepted;
  if (cli.rfind("eval ", 0) == 0) return kEvalAccepted;
  if (cli.rfind("generate ", 0) == 0) return kGenerateAccepted;
  return nullptr;  // collab problems: exit 0
}

TEST(RequestTable, EveryFieldsBoundsOnTheCli) {
  if (!fs::exists(kBin)) GTEST_SKIP() << "hogwild not built";
  ASSERT_TRUE(fs::exists(kModel + "/config.json")) << kModel;
  for (const Row& row : rows()) {
    if (row.cli.empty()) continue;
    for (const Case& c : row.cases) {
      const std::string args = with_value(row.cli, c.value);
      SCOPED_TRACE(row.field + " = " + c.value.substr(0, 40) + ": hogwild " + args.substr(0, 200));
      const Cli r = hogwild(args);
      if (!c.refused.empty()) {
        EXPECT_NE(r.code, 0) << r.out;
        EXPECT_NE(r.out.find(c.refused), std::string::npos) << r.out;
        EXPECT_EQ(r.out.find("terminate called"), std::string::npos) << r.out;  // never a crash
        continue;
      }
      if (const char* sentinel = accepted_sentinel(row.cli)) {
        EXPECT_NE(r.code, 0) << r.out;
        EXPECT_NE(r.out.find(sentinel), std::string::npos) << r.out;
      } else {
        EXPECT_EQ(r.code, 0) << r.out;
      }
    }
  }
}

TEST(RequestTable, EveryFieldsBoundsOnTheApi) {
  for (const Row& row : rows()) {
    if (row.api.empty()) continue;
    for (const Case& c : row.cases) {
      const std::string body = R"({"prompt":"x",)" + with_value(row.api, c.value) + "}";
      SCOPED_TRACE(row.field + " = " + c.value.substr(0, 40) + ": " + body.substr(0, 200));
      if (c.refused.empty()) {
        EXPECT_NO_THROW(parse_completion_request(body, Endpoint::completion, "m"));
        continue;
      }
      try {
        parse_completion_request(body, Endpoint::completion, "m");
        ADD_FAILURE() << "accepted";
      } catch (const ApiError& e) {
        EXPECT_EQ(e.status, 400);
        EXPECT_EQ(std::string(e.what()), c.refused);
        // The param is the field's JSON path: "hogwild.budget", "max_tokens", "stop".
        EXPECT_EQ(e.param,
                  (row.api.find("\"hogwild\"") != std::string::npos ? "hogwild." : "") + row.field);
      }
    }
  }
}

// An integer field written as a whole number with a fraction part (2.0) is that integer; 2.5 is
// refused with its value.
TEST(RequestTable, WholeNumbersWithAFractionPartAreIntegers) {
  EXPECT_EQ(parse_completion_request(R"({"prompt":"x","n":2.0})", Endpoint::completion, "m").n, 2);
  try {
    parse_completion_request(R"({"prompt":"x","n":2.5})", Endpoint::completion, "m");
    ADD_FAILURE() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(std::string(e.what()), "'n' must be an integer, got 2.5");
  }
}

// The number of stop strings: 8 accepted and 9 refused with one sentence on both surfaces; a stop
// string that is not UTF-8 (only the CLI can carry one: JSON text is UTF-8) refused on the CLI.
TEST(RequestTable, StopStringCountAndEncoding) {
  const std::string refused = "9 stop strings were given; give at most 8";
  for (int n : {8, 9}) {
    std::string flags, list;
    for (int i = 0; i < n; ++i) flags += " --stop s" + std::to_string(i);
    for (int i = 0; i < n; ++i) list += (i ? ",\"s" : "\"s") + std::to_string(i) + "\"";
    const std::string body = R"({"prompt":"x","stop":[)" + list + "]}";
    SCOPED_TRACE(std::to_string(n) + " stop strings: " + body);
    if (n == 8) {
      EXPECT_NO_THROW(parse_completion_request(body, Endpoint::completion, "m"));
    } else {
      try {
        parse_completion_request(body, Endpoint::completion, "m");
        ADD_FAILURE() << "accepted";
      } catch (const ApiError& e) {
        EXPECT_EQ(e.status, 400);
        EXPECT_EQ(std::string(e.what()), refused);
        EXPECT_EQ(e.param, "stop");
      }
    }
    if (!fs::exists(kBin)) continue;
    const Cli r = hogwild(generate_cmd(flags));
    EXPECT_NE(r.code, 0) << r.out;
    EXPECT_NE(r.out.find(n == 8 ? std::string(kGenerateAccepted) : refused), std::string::npos)
        << r.out;
  }
  if (!fs::exists(kBin)) GTEST_SKIP() << "hogwild not built";
  const Cli r = hogwild(generate_cmd("--stop \"$(printf '\\377')\""));
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("a stop string is not valid UTF-8"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace hogwild::server
