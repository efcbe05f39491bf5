// PCRE2 wrapper for tokenizer.json patterns (see pipeline.h).
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/error.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/unicode.h"

namespace hogwild::tok {

namespace {

// Backtracking budget per match attempt. Real tokenizer patterns need a few steps per input byte;
// a hostile pattern (e.g. "(a*)*b") stops here with an error instead of hanging.
constexpr uint32_t kMatchLimit = 5'000'000;
constexpr uint32_t kDepthLimit = 100'000;

// Oniguruma's \s is the White_Space property; PCRE2 (UCP) adds U+180E. Rewrite \s / \S, leaving
// escaped backslashes and \Q...\E quotes intact.
std::string onig_to_pcre2(const std::string& p) {
  std::string out;
  out.reserve(p.size() + 16);
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] != '\\' || i + 1 >= p.size()) {
      out += p[i];
      continue;
    }
    char c = p[i + 1];
    if (c == 's') {
      out += "\\p{White_Space}";
    } else if (c == 'S') {
      out += "\\P{White_Space}";
    } else if (c == 'Q') {
      size_t e = p.find("\\E", i + 2);
      size_t stop = e == std::string::npos ? p.size() : e + 2;
      out.append(p, i, stop - i);
      i = stop - 1;
      continue;
    } else {
      out += '\\';
      out += c;
    }
    ++i;
  }
  return out;
}

}  // namespace

Regex::Regex(const std::string& pattern, bool literal) {
  if (!utf8_valid(pattern)) fail("tokenizer.json: a split/replace pattern is not valid UTF-8.");
  // HF: an empty String pattern matches nothing (the whole input stays one non-match).
  never_ = literal && pattern.empty();
  std::string p = literal ? pattern : onig_to_pcre2(pattern);
  uint32_t opts = literal ? (PCRE2_UTF | PCRE2_LITERAL) : (PCRE2_UTF | PCRE2_UCP);
  int err = 0;
  PCRE2_SIZE off = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(p.data()), p.size(), opts, &err, &off, nullptr);
  if (!code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    fail(
        "tokenizer.json: cannot compile regex /{}/ at offset {}: {}. Check the pattern field of "
        "the pre_tokenizer/normalizer.",
        pattern, static_cast<size_t>(off), reinterpret_cast<const char*>(msg));
  }
  code_ = code;
  jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  auto* mctx = pcre2_match_context_create(nullptr);
  pcre2_set_match_limit(mctx, kMatchLimit);
  pcre2_set_depth_limit(mctx, kDepthLimit);
  mctx_ = mctx;
}

Regex::~Regex() {
  pcre2_match_context_free(static_cast<pcre2_match_context*>(mctx_));
  pcre2_code_free(static_cast<pcre2_code*>(code_));
}

void Regex::find_all(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const {
  for_each(s, [&](size_t b, size_t e) { out.emplace_back(b, e); });
}

void Regex::for_each_impl(std::string_view s, void* ctx, void (*cb)(void*, size_t, size_t)) const {
  if (never_) return;
  auto* code = static_cast<pcre2_code*>(code_);
  // One match-data block per thread, grown on demand and freed when the thread ends.
  struct MatchData {
    pcre2_match_data* md = nullptr;
    uint32_t pairs = 0;
    ~MatchData() {
      if (md) pcre2_match_data_free(md);
    }
  };
  thread_local MatchData data;
  uint32_t need = 0;
  pcre2_pattern_info(code, PCRE2_INFO_CAPTURECOUNT, &need);
  need += 1;
  if (!data.md || data.pairs < need) {
    if (data.md) pcre2_match_data_free(data.md);
    data.pairs = std::max<uint32_t>(need, 16);
    data.md = pcre2_match_data_create(data.pairs, nullptr);
  }
  pcre2_match_data* md = data.md;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
  size_t pos = 0;
  while (pos <= s.size()) {
    int rc = jit_ ? pcre2_jit_match(code, subject, s.size(), pos, PCRE2_NO_UTF_CHECK, md,
                                    static_cast<pcre2_match_context*>(mctx_))
                  : pcre2_match(code, subject, s.size(), pos, PCRE2_NO_UTF_CHECK, md,
                                static_cast<pcre2_match_context*>(mctx_));
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      fail(
          "tokenizer regex failed on the input ({}); the pattern in tokenizer.json backtracks "
          "too much for this text.",
          reinterpret_cast<const char*>(msg));
    }
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    size_t b = ov[0], e = ov[1];
    if (e < b) e = b;  // \K tricks can report end < start; treat as empty
    cb(ctx, b, e);
    if (e > b) {
      pos = e;
    } else {
      if (b >= s.size()) break;
      int l = utf8_seq_len(s, b);
      pos = b + (l > 0 ? l : 1);
    }
  }
}

std::unique_ptr<Regex> parse_pattern(const json& j, const char* where) {
  if (j.is_object() && j.contains("Regex") && j["Regex"].is_string())
    return std::make_unique<Regex>(j["Regex"].get<std::string>(), false);
  if (j.is_object() && j.contains("String") && j["String"].is_string())
    return std::make_unique<Regex>(j["String"].get<std::string>(), true);
  fail("tokenizer.json: {} needs a pattern {{\"Regex\": ...}} or {{\"String\": ...}}.", where);
}

}  // namespace hogwild::tok
