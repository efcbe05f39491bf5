// `hogwild bench --kv-budgets`: the results as text (kv_budget_bench.h kv_budget_table).
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "bench/kv_budget_bench.h"

namespace hogwild::bench {

namespace {

// A row's name in the tables: "none", its budget, or "scored".
std::string row_label(const nlohmann::json& r) {
  const std::string kind = r.value("kind", "");
  return kind == "budget" ? std::to_string(r["kv_budget"].get<int64_t>()) : kind;
}

// One line per row: the totals.
std::string summary_table(const nlohmann::json& j) {
  std::string s = fmt::format(
      "| {:>8} | {:>6} | {:>8} | {:>8} | {:>9} | {:>8} | {:>9} | {:>9} | {:>8} | {:>9} | {:>11} "
      "|\n",
      "budget", "steps", "step ms", "fwd ms", "forget ms", "forget %", "tok/s/wkr", "tok/s agg",
      "read", "forgotten", "stop");
  s += "|----------|--------|----------|----------|-----------|----------|-----------|-----------|"
       "----------|-----------|-------------|\n";
  for (const auto& r : j["results"])
    s += fmt::format(
        "| {:>8} | {:>6} | {:>8.3f} | {:>8.3f} | {:>9.4f} | {:>8.3f} | {:>9.1f} | {:>9.1f} | "
        "{:>8} | {:>9} | {:>11} |\n",
        row_label(r), r["serial_steps"].get<int64_t>(), r["step_ms"].get<double>(),
        r["forward_ms_median"].get<double>(), r["forget_ms_per_step"].get<double>(),
        100.0 * r["forget_share"].get<double>(), r["tok_s_per_worker"].get<double>(),
        r["tok_s_aggregate"].get<double>(), r["read_tokens"].get<int64_t>(),
        r["forgotten_tokens"].get<int64_t>(), r["stop_reason"].get<std::string>());
  return s;
}

// One line per window (the windows of the first row; rows that ran fewer steps show "-"), one
// column per row: median forward ms / history tokens still read at the window's end.
std::string window_table(const nlohmann::json& j) {
  const nlohmann::json& rows = j["results"];
  size_t n = 0;
  for (const auto& r : rows) n = std::max(n, r["windows"].size());
  std::string s = fmt::format("| {:>13} |", "serial steps");
  std::string rule = "|---------------|";
  for (const auto& r : rows) {
    s += fmt::format(" {:>17} |", row_label(r));
    rule += "-------------------|";
  }
  s += "\n" + rule + "\n";
  for (size_t i = 0; i < n; ++i) {
    std::string line;
    std::string span;
    for (const auto& r : rows) {
      if (i >= r["windows"].size()) {
        line += fmt::format(" {:>17} |", "-");
        continue;
      }
      const nlohmann::json& w = r["windows"][i];
      if (span.empty())
        span = fmt::format("{}-{}", w["from"].get<int64_t>(), w["to"].get<int64_t>());
      line += fmt::format(" {:>8.3f} / {:>6} |", w["forward_ms_median"].get<double>(),
                          w["read_tokens"].get<int64_t>());
    }
    s += fmt::format("| {:>13} |{}\n", span, line);
  }
  return s;
}

}  // namespace

std::string kv_budget_table(const nlohmann::json& j) {
  std::string s = fmt::format(
      "device: {} ({}), model {}, {} workers, {} serial steps, a step every {} tokens, prompt {} "
      "tokens, formatting {}\n",
      j.value("device", ""), j.value("backend", ""), j.value("model", ""), j.value("workers", 0),
      j.value("serial_steps", int64_t{0}), j.value("step_every", int64_t{0}),
      j.value("prompt_tokens", int64_t{0}), j.value("formatting", ""));
  s += summary_table(j);
  s += "\nforward ms (median) / history tokens still read at the window's end\n";
  s += window_table(j);
  return s;
}

}  // namespace hogwild::bench
