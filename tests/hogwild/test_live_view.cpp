// The live view cannot be broken by model text: control characters are shown, not obeyed; wide
// characters and tabs are measured in terminal columns; the frame fits the terminal whatever the
// worker count and text. The mode follows the environment (terminal, TERM=dumb, NO_COLOR,
// --no-live); the greedy same-text warning; the KV estimate.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "hogwild/kv_budget.h"
#include "hogwild/live_view.h"
#include "hogwild/picker.h"
#include "hogwild/session.h"
#include "hogwild/term_text.h"

namespace hogwild {
namespace {

// Columns of a frame line without its colour codes (ESC [ ... m).
int columns(const std::string& line) {
  std::string plain;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b') {
      while (i < line.size() && line[i] != 'm') ++i;
      continue;
    }
    plain += line[i];
  }
  EXPECT_EQ(plain.find('\x1b'), std::string::npos);
  return display_width(plain);
}

TEST(TerminalText, ControlCharactersAreShownNotObeyed) {
  EXPECT_EQ(terminal_safe("a\x1b[2Jb"), "a^[[2Jb");  // clear-screen sequence
  EXPECT_EQ(terminal_safe("over\rwrite"), "over^Mwrite");
  EXPECT_EQ(terminal_safe(std::string("nul\0x", 5)), "nul^@x");
  EXPECT_EQ(terminal_safe("del\x7f"), "del^?");
  EXPECT_EQ(terminal_safe("tab\tand\nline"), "tab\tand\nline");
  EXPECT_EQ(terminal_safe("c1\xC2\x9B"
                          "31m"),
            "c1<U+009B>31m");                                    // CSI as a C1 control
  EXPECT_EQ(terminal_safe("rtl\xE2\x80\xAEx"), "rtl<U+202E>x");  // right-to-left override
  EXPECT_EQ(terminal_safe("\xff"
                          "ok"),
            "\xEF\xBF\xBD"
            "ok");  // invalid byte: U+FFFD
  EXPECT_EQ(terminal_safe("\xE4\xB8\xAD\xE6\x96\x87"), "\xE4\xB8\xAD\xE6\x96\x87");  // 中文 kept
}

TEST(TerminalText, WidthsCountWideCharactersCombiningMarksAndTabs) {
  EXPECT_EQ(display_width("abc"), 3);
  EXPECT_EQ(display_width("\xE4\xB8\xAD\xE6\x96\x87"), 4);  // two wide CJK characters
  EXPECT_EQ(display_width("e\xCC\x81"), 1);                 // e + combining acute accent
  EXPECT_EQ(display_width("a\tb"), 9);                      // tab to column 8
  EXPECT_EQ(display_width("\t"), 8);
}

TEST(TerminalText, WrapNeverCutsAWideCharacterNorPassesTheWidth) {
  // 5 wide characters in 4 columns: 2 per line.
  const std::string cjk = "\xE4\xB8\x80\xE4\xB8\x81\xE4\xB8\x82\xE4\xB8\x83\xE4\xB8\x84";
  const auto lines = wrap_display(cjk, 5);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "\xE4\xB8\x80\xE4\xB8\x81");
  EXPECT_EQ(display_width(lines[0]), 4);
  EXPECT_EQ(lines[2], "\xE4\xB8\x84");
  // Tabs become spaces; a line is never wider than the terminal.
  const auto t = wrap_display("ab\tcd\tef", 10);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0], "ab      cd");
  EXPECT_EQ(t[1], "      ef");  // the second tab runs from column 10 to 16
  EXPECT_EQ(wrap_display("x\n\ny", 4), (std::vector<std::string>{"x", "", "y"}));
  EXPECT_EQ(fit_columns("abcdef", 3), "abc");
  EXPECT_EQ(fit_columns("abcdef", 3, true), "def");
  EXPECT_EQ(fit_columns("\xE4\xB8\x80\xE4\xB8\x81", 3, true), "\xE4\xB8\x81");
}

TEST(LiveViewFrame, FitsTheTerminalWhateverTheWorkersWrite) {
  FrameState s;
  s.status = "serial step 7 / 100 | 1.0 s | 7.0 tok/s | 14 tokens | answer: none yet";
  std::string hostile = "\x1b[2J\x1b[31mred\r";
  for (int i = 0; i < 40; ++i) hostile += "\xE4\xB8\xAD\t" + std::to_string(i) + "\n";
  for (int w = 0; w < 8; ++w) {
    s.names.push_back("Worker" + std::to_string(w));
    s.current.push_back(hostile);
    s.history.emplace_back(w, hostile);
  }
  for (int rows : {3, 5, 10, 24, 50}) {
    for (int cols : {10, 40, 80}) {
      for (int n : {1, 2, 8}) {
        FrameState t = s;
        t.names.resize(n);
        t.current.resize(n);
        const auto frame = render_frame(t, rows, cols, /*colour=*/true);
        SCOPED_TRACE(testing::Message() << rows << "x" << cols << ", " << n << " workers");
        EXPECT_LE(static_cast<int>(frame.size()), rows - 1);
        for (const std::string& line : frame) {
          EXPECT_LE(columns(line), cols) << line;
          EXPECT_EQ(line.find("\x1b[2J"), std::string::npos);
          EXPECT_EQ(line.find('\r'), std::string::npos);
          EXPECT_EQ(line.find('\t'), std::string::npos);
          EXPECT_EQ(line.find('\n'), std::string::npos);
        }
      }
    }
  }
  // With room: status, history header, history, then each worker's name and text.
  FrameState two = s;
  two.names.resize(2);
  two.current = {"first\nsecond", "third"};
  two.history = {{0, "done."}};
  const auto frame = render_frame(two, 24, 80, false);
  EXPECT_EQ(frame[0], s.status);
  EXPECT_EQ(frame[1], "-- shared history (1 finished steps) --");
  EXPECT_EQ(frame[2], "done.");
  EXPECT_EQ(frame[3], "-- Worker0 --");
  EXPECT_EQ(frame[4], "first");
  EXPECT_EQ(frame[5], "second");
  EXPECT_EQ(frame[6], "-- Worker1 --");
  EXPECT_EQ(frame[7], "third");
  // Little room: one line per worker, the end of its text.
  const auto small = render_frame(two, 4, 20, false);  // 9 + 11 columns: the end of the text
  ASSERT_EQ(small.size(), 3u);
  EXPECT_EQ(small[1], "Worker0: irst second");
  EXPECT_EQ(small[2], "Worker1: third");
}

TEST(LiveViewMode, FollowsTheTerminalAndTheEnvironment) {
  std::FILE* err = stderr;
  LiveViewOptions o = live_view_mode(true, true, "xterm-256color", nullptr, false, err);
  EXPECT_TRUE(o.redraw);
  EXPECT_TRUE(o.colour);
  EXPECT_EQ(o.status, nullptr);
  o = live_view_mode(true, true, "xterm", "1", false, err);  // NO_COLOR
  EXPECT_TRUE(o.redraw);
  EXPECT_FALSE(o.colour);
  o = live_view_mode(true, true, "xterm", "", false, err);  // NO_COLOR empty: colours stay
  EXPECT_TRUE(o.colour);
  o = live_view_mode(true, true, "dumb", nullptr, false, err);  // no cursor movement
  EXPECT_FALSE(o.redraw);
  o = live_view_mode(true, true, "xterm", nullptr, true, err);  // --no-live
  EXPECT_FALSE(o.redraw);
  o = live_view_mode(false, false, "xterm", nullptr, false, err);  // stdout to a file, log stderr
  EXPECT_FALSE(o.redraw);
  EXPECT_EQ(o.status, err);
  EXPECT_FALSE(o.status_in_place);
  EXPECT_EQ(o.status_every_seconds, 10);
  o = live_view_mode(false, true, "xterm", nullptr, false, err);  // stderr on a terminal
  EXPECT_TRUE(o.status_in_place);
}

TEST(LiveViewStatus, StatusLineAndPlainLinesAreSafe) {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* out = open_memstream(&buf, &len);
  LiveViewOptions o;
  o.budget = 100;
  o.n_snapshots = 2;
  LiveView v(out, {"Alice", "Bob"}, o);
  ForwardRecord r;
  r.serial_step = 3;
  v.on_forward(r);
  v.on_step_start(0, 1, "**Alice [1]:** ", false);
  v.on_token({0, 1, 3, 5, "\x1b[31m", false});
  v.on_step_end(0, 1, "**Alice [1]:** \x1b[31mred\rX.\n\n", std::string("4\x1b"));
  const std::string s = v.status_line();
  EXPECT_EQ(s.rfind("serial step 3 / 100 | ", 0), 0u) << s;
  EXPECT_NE(s.find(" tokens | snapshots 0/2 | answer: 4^[ (Alice)"), std::string::npos) << s;
  std::fclose(out);
  const std::string text(buf, len);
  free(buf);
  EXPECT_EQ(text,
            "[serial step 3] **Alice [1]:** ^[[31mred^MX.\n"
            "[answer from Alice] 4^[\n");
}

TEST(SameTextWarning, OnlyWhenNothingTellsTheWorkersApart) {
  SamplingParams greedy;  // do_sample false
  SamplingParams sampled;
  sampled.do_sample = true;
  sampled.temperature = 0.7f;
  const Formatting plain = builtin_formatting("plain");
  const Formatting named = builtin_formatting("qwen3-math");
  auto w = same_text_warning(greedy, plain, 2);
  ASSERT_TRUE(w.has_value());
  EXPECT_NE(w->find("all 2 workers see the same tokens and will write the same text"),
            std::string::npos);
  EXPECT_FALSE(same_text_warning(greedy, plain, 1));
  EXPECT_FALSE(same_text_warning(sampled, plain, 4));
  EXPECT_FALSE(same_text_warning(greedy, named, 4));  // names in every step prefix
}

// The KV estimate of a run (kv_budget.h), by hand: the longest view is bounded by what the
// workers can feed in the budget's serial steps, then the finisher, one page per live block
// (3w + 4) and the constant blocks are added.
TEST(KvBudget, HandComputedEstimates) {
  // prompt 100, 2 workers, budget 50, context 32768, finisher 32, no step openings: each worker
  // feeds one token per serial step: min(32768, 100 + 2 * 50) = 200; + 32 + 64 * 10 + 256 * 2.
  EXPECT_EQ(run_kv_tokens({100, 2, 50, 32768, 32}), 1384);
  // Openings of 17 tokens, a collaboration question of 11 every 7 generated tokens: every serial
  // step may feed a token and an opening (a step may end at each token), 2 * 50 * (1 + 17) =
  // 1800, and at most (50 + 1) * 2 / 7 = 14 questions, 154: 100 + 1800 + 154 = 2054.
  EXPECT_EQ(run_kv_tokens({100, 2, 50, 32768, 32, false, 0, 0, 17, 11, 7}), 2054 + 32 + 640 + 512);
  // No budget: the context bounds the view. 32768 + 32 + 640 + 512.
  EXPECT_EQ(run_kv_tokens({100, 2, 0, 32768, 32}), 33952);
  EXPECT_EQ(run_kv_tokens({100, 2, 0, 32768, 32, false, 0, 0, 17, 11, 7}), 33952);
  // A huge budget or unknown context saturate instead of overflowing.
  EXPECT_EQ(run_kv_tokens({100, 8, INT64_MAX / 2, 4096, 0}), 4096 + 64 * 28 + 256 * 8);
  EXPECT_EQ(run_kv_tokens({100, 8, INT64_MAX / 2, 4096, 0, false, 0, 0, 17, 11, 1}),
            4096 + 64 * 28 + 256 * 8);
  EXPECT_GT(run_kv_tokens({100, 8, 0, 0, 32}), INT64_MAX / 8);
  // Independent layout: each worker's own output and finisher. Without openings: views
  // 100 + 4 * 50 = 300, per worker min(300 - 100, 50) = 50; 100 + 4 * (50 + 32) = 428;
  // + 32 + 64 * 16 + 256 * 4.
  EXPECT_EQ(run_kv_tokens({100, 4, 50, 32768, 32, true}), 428 + 32 + 1024 + 1024);
  // With them: per worker 50 * 18 = 900 and its own questions, (50 + 1) / 7 = 7 of 11 tokens:
  // 977; 100 + 4 * (977 + 32) = 4136.
  EXPECT_EQ(run_kv_tokens({100, 4, 50, 32768, 32, true, 0, 0, 17, 11, 7}), 4136 + 32 + 1024 + 1024);
}

// Session::serial_steps_bound: a worker stops at max_tokens_per_worker and each serial step samples
// one token of every active worker, so the smaller of that and the budget bounds the serial steps
// (not for Skeleton-of-Thought, which wakes stopped workers again).
TEST(KvBudget, MaxTokensBoundTheSerialSteps) {
  SessionOptions o;
  EXPECT_EQ(Session::serial_steps_bound(o), 0);  // neither: no bound
  o.max_tokens_per_worker = 128;
  EXPECT_EQ(Session::serial_steps_bound(o), 128);
  o.budget = 50;
  EXPECT_EQ(Session::serial_steps_bound(o), 50);
  o.budget = 500;
  EXPECT_EQ(Session::serial_steps_bound(o), 128);
  o.skeleton = true;
  EXPECT_EQ(Session::serial_steps_bound(o), 500);
  // A plain completion of 128 tokens after a 20-token prompt in a 40960-token context (Qwen3-8B),
  // finisher 1, no step openings: 20 + 128 + 1 + 64 * 7 + 256 = 853 KV tokens instead of
  // 40960 + 1 + 448 + 256 = 41665 (a pool of 882000 tokens holds 1033 of them, not 21).
  EXPECT_EQ(run_kv_tokens({20, 1, 128, 40960, 1}), 853);
  EXPECT_EQ(run_kv_tokens({20, 1, 0, 40960, 1}), 41665);
}

}  // namespace
}  // namespace hogwild
