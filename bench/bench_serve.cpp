// Load benchmark of `hogwild serve` (docs/SERVER.md "Benchmark"): for each number of concurrent
// clients, every client sends streaming /v1/chat/completions requests back to back; the table
// gives requests/s, generated tok/s (all workers), time to first token and inter-token latency
// (p50 / p99, milliseconds), and from the server's /metrics the mean sessions and prompt chunks per
// engine forward and the mean preparation and queue times. Prints the table and writes JSON.
//
//   hogwild serve -m DIR --port 8080 &
//   build/bench/bench_serve --url http://127.0.0.1:8080 [--clients 1,2,4,8,16,32,64]
//       [--requests N] [--max-tokens 64] [--workers 0] [--budget 64] [--api-key KEY]
//       [--problems FILE] [--temperature 0.8] [--json bench_serve.json]
//
// --workers 0 sends plain completions (max_tokens tokens each); --workers W >= 1 sends hogwild
// requests of W workers and --budget serial steps (tokens = the workers' tokens, first token =
// the first worker token). Compare the tok/s with `hogwild bench --sessions S` for the engine
// alone at the same shapes: the difference is the server's overhead. --problems FILE (JSON lines
// with a "problem" field, as `hogwild eval` datasets and `hogwild collab problems` write them)
// sends request i the problem i mod N instead of one fixed question; the table then also gives the
// prefix cache's hit rate over the level (prompt tokens shared / looked up, from /metrics): run
// it against a server with and without --no-prefix-cache to see the TTFT the cache saves.
#include <httplib.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

struct Args {
  std::string url = "http://127.0.0.1:8080", clients = "1,2,4,8,16,32,64", api_key, json_out;
  std::string problems_file;
  std::vector<std::string> problems;  // the user messages (--problems); empty = one fixed question
  int requests = 0;                   // per level; 0 = 2 x clients (at least 8)
  int max_tokens = 64, workers = 0, budget = 64;
  double temperature = 0.8;
};

// The "problem" of every JSON line of `path`; throws std::runtime_error naming the line that is
// not a JSON object with a string "problem", or when the file cannot be read or holds none.
std::vector<std::string> read_problems(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read '" + path + "'");
  std::vector<std::string> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("problem") || !j["problem"].is_string())
      throw std::runtime_error(path + ":" + std::to_string(n) +
                               ": not a JSON object with a string \"problem\"");
    out.push_back(j["problem"].get<std::string>());
  }
  if (out.empty()) throw std::runtime_error("'" + path + "' holds no problems");
  return out;
}

struct Sample {
  bool ok = false;          // 200 and a complete stream
  bool any_token = false;   // a token arrived (a plain request may end at once on EOS)
  double ttft = 0;          // seconds to the first token
  std::vector<double> itl;  // seconds between consecutive token chunks
  int64_t tokens = 0;       // completion tokens (usage)
};

double ms(double s) { return s * 1000.0; }

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5));
  return v[i];
}

// One streaming request; fills the sample from the SSE chunks as they arrive.
// Request i sends the problem i mod N of --problems, or one fixed question.
Sample one_request(httplib::Client& cli, const Args& a, int i) {
  const std::string content = a.problems.empty()
                                  ? "What is the sum of the primes below 50?"
                                  : a.problems[static_cast<size_t>(i) % a.problems.size()];
  json body = {{"messages", {{{"role", "user"}, {"content", content}}}},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}},
               {"seed", 1000 + i},
               {"temperature", a.temperature}};
  if (a.workers > 0)
    body["hogwild"] = {{"workers", a.workers}, {"budget", a.budget}};
  else
    body["max_tokens"] = a.max_tokens;
  Sample s;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/chat/completions";
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  if (!a.api_key.empty()) req.set_header("Authorization", "Bearer " + a.api_key);
  const auto t0 = Clock::now();
  auto last = t0;
  bool first = true;
  std::string buf;
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    buf.append(data, n);
    size_t cut;
    while ((cut = buf.find("\n\n")) != std::string::npos) {
      std::string ev = buf.substr(0, cut);
      buf.erase(0, cut + 2);
      if (ev.rfind("data: ", 0) != 0 || ev == "data: [DONE]") continue;
      const json j = json::parse(ev.substr(6), nullptr, false);
      if (j.is_discarded()) continue;
      if (j.contains("usage") && j["usage"].is_object())
        s.tokens = j["usage"].value("completion_tokens", int64_t{0});
      // A plain request's text comes as content, or as reasoning_content inside the thinking.
      auto text = [&j](const char* field) {
        const json& d = j["choices"][0]["delta"];
        return d.contains(field) && d[field].is_string() && !d[field].get<std::string>().empty();
      };
      const bool token = (j.contains("hogwild") && j["hogwild"].value("event", "") == "token") ||
                         (a.workers == 0 && !j["choices"].empty() &&
                          (text("content") || text("reasoning_content")));
      if (!token) continue;
      const auto now = Clock::now();
      if (first)
        s.ttft = std::chrono::duration<double>(now - t0).count();
      else
        s.itl.push_back(std::chrono::duration<double>(now - last).count());
      first = false;
      last = now;
    }
    return true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  s.ok = cli.send(req, res, err) && res.status == 200;
  s.any_token = !first;
  return s;
}

// The server's /metrics as name (with labels) -> value; empty when it does not answer.
std::map<std::string, double> scrape(const Args& a) {
  std::map<std::string, double> m;
  httplib::Client cli(a.url);
  httplib::Headers h;
  if (!a.api_key.empty()) h.emplace("Authorization", "Bearer " + a.api_key);
  auto res = cli.Get("/metrics", h);
  if (!res || res->status != 200) return m;
  std::istringstream in(res->body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t sp = line.rfind(' ');
    if (sp == std::string::npos) continue;
    try {
      m[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
    } catch (const std::exception&) {
    }
  }
  return m;
}

// Mean of a /metrics histogram (or summary) over what was observed between two scrapes, all its
// label sets (e.g. every method) together; 0 when nothing was.
double mean_between(const std::map<std::string, double>& before,
                    const std::map<std::string, double>& after, const std::string& name) {
  auto get = [](const std::map<std::string, double>& m, const std::string& k) {
    double v = 0;
    for (auto it = m.lower_bound(k); it != m.end() && it->first.rfind(k, 0) == 0; ++it)
      if (it->first.size() == k.size() || it->first[k.size()] == '{') v += it->second;
    return v;
  };
  const double n = get(after, name + "_count") - get(before, name + "_count");
  return n > 0 ? (get(after, name + "_sum") - get(before, name + "_sum")) / n : 0.0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"load benchmark of hogwild serve: requests/s, TTFT, ITL for 1..64 clients"};
  app.add_option("--url", a.url, "server base URL (default http://127.0.0.1:8080)");
  app.add_option("--clients", a.clients, "concurrent clients per level, comma-separated");
  app.add_option("--requests", a.requests, "requests per level (default 2 x clients, >= 8)");
  app.add_option("--max-tokens", a.max_tokens, "plain requests: tokens per request");
  app.add_option("--workers", a.workers,
                 "0 = plain completions; W = hogwild requests of W workers");
  app.add_option("--budget", a.budget, "hogwild requests: serial steps");
  app.add_option("--api-key", a.api_key, "the server's API key");
  app.add_option("--problems", a.problems_file,
                 "JSON lines with a \"problem\" each: request i sends problem i mod N");
  app.add_option("--temperature", a.temperature, "sampling temperature (0 = greedy; default 0.8)");
  app.add_option("--json", a.json_out, "write the results as JSON to FILE");
  CLI11_PARSE(app, argc, argv);
  if (!a.problems_file.empty()) {
    try {
      a.problems = read_problems(a.problems_file);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: --problems: %s\n", e.what());
      return 1;
    }
  }
  if (!a.json_out.empty()) {  // before the run: an unwritable path fails at once
    std::ofstream f(a.json_out);
    if (!f) {
      std::fprintf(stderr, "error: --json: cannot write '%s'\n", a.json_out.c_str());
      return 1;
    }
  }

  std::vector<int> levels;
  {
    std::stringstream ss(a.clients);
    std::string part;
    while (std::getline(ss, part, ',')) {
      try {
        levels.push_back(std::stoi(part));
      } catch (const std::exception&) {
        std::fprintf(stderr, "error: --clients: '%s' is not a number\n", part.c_str());
        return 1;
      }
      if (levels.back() < 1 || levels.back() > 1024) {
        std::fprintf(stderr, "error: --clients: %d is outside 1..1024\n", levels.back());
        return 1;
      }
    }
  }
  {
    httplib::Client probe(a.url);
    auto h = probe.Get("/health");
    if (!h || h->status != 200) {
      std::fprintf(stderr, "error: %s/health does not answer 200; start `hogwild serve` first\n",
                   a.url.c_str());
      return 1;
    }
  }
  const std::string shape =
      a.workers > 0 ? "hogwild requests, " + std::to_string(a.workers) + " workers, budget " +
                          std::to_string(a.budget) + " serial steps"
                    : "plain requests, " + std::to_string(a.max_tokens) + " tokens";
  std::printf("%s: %s\n", a.url.c_str(), shape.c_str());
  std::printf("%8s %9s %8s %9s %9s %9s %9s %9s %6s %9s %9s %9s %9s %9s\n", "clients", "requests",
              "req/s", "tok/s", "TTFT p50", "TTFT p99", "ITL p50", "ITL p99", "failed", "sess/fwd",
              "pref/fwd", "prep ms", "queue ms", "pfx hit");
  json out = {
      {"url", a.url},           {"problems", a.problems_file}, {"temperature", a.temperature},
      {"workers", a.workers},   {"budget", a.budget},          {"max_tokens", a.max_tokens},
      {"levels", json::array()}};
  for (int clients : levels) {
    const int total = a.requests > 0 ? a.requests : std::max(8, 2 * clients);
    std::atomic<int> next{0};
    std::mutex m;
    std::vector<Sample> samples;
    const auto before = scrape(a);
    const auto t0 = Clock::now();
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c)
      threads.emplace_back([&] {
        httplib::Client cli(a.url);
        cli.set_read_timeout(600, 0);
        for (int i; (i = next++) < total;) {
          Sample s = one_request(cli, a, i);
          std::lock_guard<std::mutex> l(m);
          samples.push_back(std::move(s));
        }
      });
    for (auto& t : threads) t.join();
    const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    // The server's view of the level (/metrics): sessions and prompt chunks per engine forward
    // (how many requests the engine ran and prefilled together), and the mean seconds from a
    // request read whole to its submission (HTTP thread, parsing, tokenization) and from there to
    // its first forward (admission).
    const auto after = scrape(a);
    const double sess_fwd = mean_between(before, after, "hogwild_forward_sessions");
    const double pref_fwd = mean_between(before, after, "hogwild_forward_prefills");
    const double prep = mean_between(before, after, "hogwild_request_prepare_seconds");
    const double queue = mean_between(before, after, "hogwild_request_queue_seconds");
    // The prefix cache over the level: prompt tokens shared / prompt tokens looked up.
    auto delta = [&](const char* name) {
      const auto b = before.find(name), e = after.find(name);
      return (e == after.end() ? 0.0 : e->second) - (b == before.end() ? 0.0 : b->second);
    };
    const double queried = delta("hogwild_prefix_cache_queries_total");
    const double hit_rate = queried > 0 ? delta("hogwild_prefix_cache_hits_total") / queried : 0.0;
    std::vector<double> ttft, itl;
    int64_t tokens = 0;
    int failed = 0;
    for (auto& s : samples) {
      if (!s.ok) {
        ++failed;
        continue;
      }
      if (s.any_token) ttft.push_back(s.ttft);
      itl.insert(itl.end(), s.itl.begin(), s.itl.end());
      tokens += s.tokens;
    }
    const double rps = (total - failed) / wall, tps = tokens / wall;
    std::printf("%8d %9d %8.2f %9.1f %9.1f %9.1f %9.2f %9.2f %6d %9.1f %9.1f %9.2f %9.1f %9.3f\n",
                clients, total, rps, tps, ms(percentile(ttft, 0.5)), ms(percentile(ttft, 0.99)),
                ms(percentile(itl, 0.5)), ms(percentile(itl, 0.99)), failed, sess_fwd, pref_fwd,
                ms(prep), ms(queue), hit_rate);
    std::fflush(stdout);
    out["levels"].push_back({{"clients", clients},
                             {"requests", total},
                             {"failed", failed},
                             {"seconds", wall},
                             {"requests_per_second", rps},
                             {"tokens_per_second", tps},
                             {"ttft_ms_p50", ms(percentile(ttft, 0.5))},
                             {"ttft_ms_p99", ms(percentile(ttft, 0.99))},
                             {"itl_ms_p50", ms(percentile(itl, 0.5))},
                             {"itl_ms_p99", ms(percentile(itl, 0.99))},
                             {"sessions_per_forward", sess_fwd},
                             {"prefills_per_forward", pref_fwd},
                             {"prepare_ms_mean", ms(prep)},
                             {"queue_ms_mean", ms(queue)},
                             {"prefix_cache_queried_tokens", queried},
                             {"prefix_cache_hit_rate", hit_rate}});
  }
  if (!a.json_out.empty()) {
    std::ofstream f(a.json_out);
    if (!f) {
      std::fprintf(stderr, "error: --json: cannot write '%s'\n", a.json_out.c_str());
      return 1;
    }
    f << out.dump(1) << "\n";
  }
  return 0;
}
