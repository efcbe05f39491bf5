// The code sandbox (sandbox.h) contains hostile programs and the harness goes on: an infinite
// loop, a fork bomb, a memory hog, huge output, a network attempt and writes outside the run
// directory, with bubblewrap and with rlimits only. After each, a normal program still runs.
#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "eval/code_tests.h"
#include "eval/sandbox.h"

namespace hogwild::eval {
namespace {

namespace fs = std::filesystem;

SandboxLimits small_limits() {
  SandboxLimits l;
  l.cpu_seconds = 2;
  l.wall_seconds = 6;
  l.memory_bytes = 256ll << 20;
  l.output_bytes = 64 << 10;
  l.processes = 32;
  return l;
}

/// Processes of `uid` (the sandbox's user) alive now.
int sandbox_processes(uid_t uid) {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream st(e.path() / "status");
    std::string line;
    while (std::getline(st, line))
      if (line.rfind("Uid:", 0) == 0) {
        std::istringstream ss(line.substr(4));
        int real = -1;
        ss >> real;
        n += real == static_cast<int>(uid);
        break;
      }
  }
  return n;
}

class SandboxTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
    box_ = std::make_unique<Sandbox>(small_limits(), "/usr/bin/python3", GetParam());
    before_ = sandbox_processes(box_->uid());
    if (std::string(GetParam()) == "auto" && std::string(box_->isolation()) != "bubblewrap")
      GTEST_SKIP() << "bubblewrap does not work here (apt-get install bubblewrap)";
  }
  void TearDown() override {
    if (!box_) return;
    // The harness goes on: an ordinary program runs and prints.
    SandboxResult r =
        box_->run_python("import sys\nprint(sum(map(int, sys.stdin.read().split())))", "2 3 4");
    EXPECT_EQ(r.status(), "ok") << r.err;
    EXPECT_EQ(r.out, "9\n");
    if (geteuid() == 0) {
      EXPECT_LE(sandbox_processes(box_->uid()), before_) << "processes outlived the run";
    }
  }
  std::unique_ptr<Sandbox> box_;
  int before_ = 0;
};

TEST_P(SandboxTest, InfiniteLoopIsKilled) {
  SandboxResult r = box_->run_python("while True:\n    pass\n", "");
  EXPECT_NE(r.status(), "ok");
  EXPECT_TRUE(r.timed_out || r.signal != 0 || r.exit_code > 128) << r.status();
}

TEST_P(SandboxTest, SleepingProgramHitsTheWallClock) {
  SandboxResult r = box_->run_python("import time\ntime.sleep(60)\n", "");
  EXPECT_TRUE(r.timed_out) << r.status();
}

TEST_P(SandboxTest, ForkBombIsContained) {
  SandboxResult r = box_->run_python(
      "import os\n"
      "while True:\n"
      "    try:\n"
      "        os.fork()\n"
      "    except OSError:\n"
      "        pass\n",
      "");
  EXPECT_NE(r.status(), "ok");
}

TEST_P(SandboxTest, MemoryHogFails) {
  SandboxResult r =
      box_->run_python("chunks = []\nwhile True:\n    chunks.append(bytearray(16 << 20))\n", "");
  EXPECT_NE(r.status(), "ok");
  EXPECT_NE(r.err.find("MemoryError"), std::string::npos) << r.status() << " " << r.err;
}

TEST_P(SandboxTest, HugeOutputIsCut) {
  SandboxResult r = box_->run_python("while True:\n    print('x' * 1000)\n", "");
  EXPECT_TRUE(r.output_limit) << r.status();
  EXPECT_EQ(r.out.size(), static_cast<size_t>(small_limits().output_bytes));
}

TEST_P(SandboxTest, BigFileIsRefused) {
  SandboxResult r = box_->run_python(
      "with open('big', 'wb') as f:\n    f.write(b'x' * (64 << 20))\nprint('wrote')\n", "");
  EXPECT_NE(r.status(), "ok");
  EXPECT_EQ(r.out.find("wrote"), std::string::npos);
}

TEST_P(SandboxTest, NoNetwork) {
  // A listener on this machine's loopback; the program must not reach it.
  int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  ASSERT_GE(s, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(s, 4), 0);
  socklen_t len = sizeof a;
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  const int port = ntohs(a.sin_port);
  SandboxResult r = box_->run_python(
      "import socket\n"
      "try:\n"
      "    socket.create_connection(('127.0.0.1', " +
          std::to_string(port) +
          "), timeout=2)\n"
          "    print('connected')\n"
          "except OSError as e:\n"
          "    print('blocked')\n",
      "");
  EXPECT_EQ(r.out, "blocked\n") << r.status() << " " << r.err;
  EXPECT_LT(accept(s, nullptr, nullptr), 0) << "the sandboxed program reached the host";
  close(s);
}

TEST_P(SandboxTest, WritesOnlyInsideItsDirectory) {
  std::mt19937_64 rng{std::random_device{}()};
  const std::string outside =
      (fs::temp_directory_path() / ("hogwild-escape-" + std::to_string(rng()))).string();
  const std::string home = std::string(getenv("HOME") ? getenv("HOME") : "/root") +
                           "/hogwild-escape-" + std::to_string(rng());
  // the parent of the sandbox's folder (the temp folder), under a name no parallel test uses
  const std::string up = "hogwild-escape-up-" + std::to_string(rng());
  SandboxResult r = box_->run_python(
      "import os\n"
      "for p in ['" +
          outside + "', '" + home + "', '../" + up +
          "', '/usr/escape']:\n"
          "    try:\n"
          "        open(p, 'w').write('x')\n"
          "    except OSError:\n"
          "        pass\n"
          "open('inside.txt', 'w').write('ok')\n"
          "print(open('inside.txt').read())\n",
      "");
  EXPECT_EQ(r.out, "ok\n") << r.status() << " " << r.err;
  EXPECT_FALSE(fs::exists(home));
  EXPECT_FALSE(fs::exists("/usr/escape"));
  if (std::string(GetParam()) == "no") {  // rlimits only: world-writable folders stay writable
    fs::remove(outside);
    fs::remove(fs::temp_directory_path() / up);
    return;
  }
  EXPECT_FALSE(fs::exists(outside));
  EXPECT_FALSE(fs::exists(fs::temp_directory_path() / up));
}

INSTANTIATE_TEST_SUITE_P(Isolation, SandboxTest, ::testing::Values("auto", "no"),
                         [](const auto& info) {
                           return std::string(info.param) == "auto" ? "Bubblewrap" : "RlimitsOnly";
                         });

TEST(CodeTests, StdinProgramAgainstStatementSamples) {
  const std::string statement =
      "Print the sum.\n\nSample Input 1\n\n2 3\n\nSample Output 1\n\n5\n\nSample Input 2\n\n"
      "10 -4\n\nSample Output 2\n\n6\n\nRead the inputs from stdin.\n";
  Problem p;
  p.tests = statement_tests(statement, &p.method);
  ASSERT_EQ(p.tests.size(), 2u);
  EXPECT_EQ(p.tests[0].input, "2 3\n");
  EXPECT_EQ(p.tests[1].output, "6\n");
  EXPECT_EQ(p.method, "");
  Sandbox box(small_limits());
  EXPECT_TRUE(run_code_tests(box, p, "a, b = map(int, input().split())\nprint(a + b)").passed);
  CodeVerdict wrong = run_code_tests(box, p, "a, b = map(int, input().split())\nprint(a - b)");
  EXPECT_FALSE(wrong.passed);
  EXPECT_EQ(wrong.status, "wrong_answer");
  CodeVerdict crash = run_code_tests(box, p, "raise SystemExit(3)");
  EXPECT_EQ(crash.status, "runtime_error");
}

TEST(CodeTests, CallTestsOfAStarterMethod) {
  const std::string statement =
      "Return the sum of nums times k.\nExample 1:\n\nInput: nums = [1,2,3], k = 2\nOutput: 12\n"
      "Explanation: ...\n\nExample 2:\n\nInput: nums = [], k = 5\nOutput: 0\n\n"
      "```python\nclass Solution:\n    def scaledSum(self, nums: List[int], k: int) -> int:\n"
      "        \n```\n";
  Problem p;
  p.tests = statement_tests(statement, &p.method);
  ASSERT_EQ(p.tests.size(), 2u);
  EXPECT_EQ(p.method, "scaledSum");
  EXPECT_EQ(p.tests[0].input, "nums = [1,2,3], k = 2");
  Sandbox box(small_limits());
  const std::string good =
      "class Solution:\n    def scaledSum(self, nums: List[int], k: int) -> int:\n"
      "        return sum(nums) * k\n";
  EXPECT_TRUE(run_code_tests(box, p, good).passed);
  const std::string bad =
      "class Solution:\n    def scaledSum(self, nums, k):\n        print('PASS')\n"
      "        return sum(nums) + k\n";
  EXPECT_FALSE(run_code_tests(box, p, bad).passed);
}

TEST(CodeTests, OutputsMatchLineByLineThenAsNumbers) {
  EXPECT_TRUE(outputs_match("1 2\n3\n", "1 2\n3"));
  EXPECT_TRUE(outputs_match("1 2  \n3\n\n", "1 2\n3\n"));
  EXPECT_TRUE(outputs_match("1.50\n", "1.5\n"));
  EXPECT_TRUE(outputs_match("2.0 3\n", "2 3.000\n"));
  EXPECT_FALSE(outputs_match("1.5000001\n", "1.5\n"));
  EXPECT_FALSE(outputs_match("1 2 3\n", "1 2\n3\n"));
  EXPECT_FALSE(outputs_match("Yes\n", "yes\n"));
}

}  // namespace
}  // namespace hogwild::eval
