// Statistics, tables, plots; see summary.h.
#include "eval/summary.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <fstream>
#include <map>

#include "core/error.h"
#include "core/io.h"
#include "core/json_text.h"

namespace hogwild::eval {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr double kZ95 = 1.959963984540054;  // two-sided 95% normal quantile

/// C(n-c, k) / C(n, k) as a product (no overflow): the chance that k of n draws miss all c.
double miss_all(int n, int c, int k) {
  if (n - c < k) return 0;
  double r = 1;
  for (int i = n - c + 1; i <= n; ++i) r *= 1.0 - static_cast<double>(k) / i;
  return r;
}

void wilson(double solved, double n, double* lo, double* hi) {
  if (n <= 0) {
    *lo = *hi = 0;
    return;
  }
  const double p = solved / n, z2 = kZ95 * kZ95;
  const double center = (p + z2 / (2 * n)) / (1 + z2 / n);
  const double half = kZ95 * std::sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n);
  *lo = std::max(0.0, center - half);
  *hi = std::min(1.0, center + half);
}

void write_text(const fs::path& p, const std::string& s) {
  AtomicOutputFile f(p.string(), "report");  // every write and the close checked (a full disk)
  f.write(s);
  f.commit();
}

/// A gnuplot single-quoted string.
std::string gp_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

/// Runs gnuplot on the script file `script` and puts what it writes to stdout in *bytes (its one
/// pipe is read to the end, so nothing can block). Returns "" or a note when it could not run
/// (not installed, or it failed).
std::string run_gnuplot(const fs::path& script, std::string* bytes) {
  int out[2];
  if (pipe(out) != 0) return "plots not made: cannot start gnuplot";
  const std::string path = script.string();
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    close(out[1]);
    execlp("gnuplot", "gnuplot", path.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  char buf[65536];
  for (ssize_t n; pid > 0 && (n = ::read(out[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    bytes->append(buf, static_cast<size_t>(n));
  }
  close(out[0]);
  int status = 0;
  if (pid < 0) return "plots not made: cannot start gnuplot";
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return "plots not made: cannot start gnuplot";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    return "plots not made: gnuplot is not installed (apt-get install gnuplot-nox); the data "
           "and script are in accuracy.dat / accuracy.gp";
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || bytes->empty())
    return "plots not made: gnuplot failed (run gnuplot on accuracy.gp to see why)";
  return "";
}

std::string label_of(const json& c) {
  std::string l = c.value("method", "?");
  const int w = c.value("workers", 1);
  l += fmt::format(" {}w", w);
  if (w > 1) l.append(" ").append(c.value("layout", ""));
  if (c.value("compat", "") == "paper") l += " (paper)";
  return l;
}

}  // namespace

SeriesSummary summarize(const json& config, const std::vector<json>& lines,
                        const std::string& dir) {
  SeriesSummary s;
  s.config = config;
  s.dir = dir;
  s.label = label_of(config);
  s.samples = std::max(1, config.value("samples", 1));
  // budget -> problem id -> (samples, correct)
  std::map<int64_t, std::map<std::string, std::pair<int, int>>> by;
  std::map<int64_t, BudgetStats> stats;
  std::map<std::pair<std::string, int>, int> scores;  // (problem, sample) -> collaboration score
  for (const json& j : lines) {
    if (!j.value("started", true)) {  // no run, nothing to score (runner.h Generation::started)
      ++s.not_started[j.value("budget", int64_t{0})];
      continue;
    }
    if (j.contains("collaboration_score") && j["collaboration_score"].is_number_integer())
      scores[{j.value("id", ""), j.value("sample", 0)}] = j["collaboration_score"].get<int>();
    const int64_t b = j.value("budget", int64_t{0});
    auto& pc = by[b][j.value("id", "")];
    ++pc.first;
    pc.second += j.value("correct", false) ? 1 : 0;
    BudgetStats& st = stats[b];
    const std::string ps = j.value("parse_status", "");
    st.unparsed += ps == "unparsed";
    st.no_answer += ps == "no_answer";
    st.cut += j.value("cut", false);
    st.mean_serial_steps += j.value("serial_steps", 0.0);
    if (j.contains("tokens_per_worker") && j["tokens_per_worker"].is_array())
      for (const auto& t : j["tokens_per_worker"]) st.mean_tokens += t.get<double>();
  }
  for (auto& [b, problems] : by) {
    BudgetStats& st = stats[b];
    st.budget = b;
    st.problems = problems.size();
    size_t n_lines = 0;
    std::vector<double> acc;
    int kmax = s.samples;
    for (auto& [id, pc] : problems) {
      n_lines += pc.first;
      acc.push_back(static_cast<double>(pc.second) / pc.first);
      kmax = std::min(kmax, pc.first);
    }
    const double n = static_cast<double>(acc.size());
    double sum = 0;
    for (double a : acc) sum += a;
    st.accuracy = sum / n;
    if (s.samples == 1) {
      wilson(sum, n, &st.ci_low, &st.ci_high);
    } else {
      double var = 0;
      for (double a : acc) var += (a - st.accuracy) * (a - st.accuracy);
      const double sd = acc.size() > 1 ? std::sqrt(var / (n - 1)) : 0;
      st.ci_low = std::max(0.0, st.accuracy - kZ95 * sd / std::sqrt(n));
      st.ci_high = std::min(1.0, st.accuracy + kZ95 * sd / std::sqrt(n));
    }
    for (int k = 1; k <= kmax; ++k) {
      double p = 0;
      for (auto& [id, pc] : problems) p += 1 - miss_all(pc.first, pc.second, k);
      st.pass_at_k.push_back(p / n);
    }
    st.mean_serial_steps /= static_cast<double>(n_lines);
    st.mean_tokens /= static_cast<double>(n_lines);
    s.budgets.push_back(st);
  }
  for (auto& [run, score] : scores) s.collaboration_score += score;
  s.judged = scores.size();
  if (s.judged > 0) s.collaboration_score /= static_cast<double>(s.judged);
  return s;
}

json summary_json(const std::vector<SeriesSummary>& series) {
  json out = json::array();
  for (const SeriesSummary& s : series) {
    json b = json::array();
    for (const BudgetStats& st : s.budgets)
      b.push_back({{"budget", st.budget},
                   {"problems", st.problems},
                   {"accuracy", st.accuracy},
                   {"ci95", {st.ci_low, st.ci_high}},
                   {"pass_at_k", st.pass_at_k},
                   {"unparsed", st.unparsed},
                   {"no_answer", st.no_answer},
                   {"cut", st.cut},
                   {"mean_serial_steps", st.mean_serial_steps},
                   {"mean_tokens", st.mean_tokens}});
    out.push_back({{"label", s.label},
                   {"dir", s.dir},
                   {"samples", s.samples},
                   {"config", s.config},
                   {"budgets", b}});
    if (s.judged > 0)
      out.back()["collaboration_score"] = {{"mean", s.collaboration_score}, {"runs", s.judged}};
  }
  return {{"series", out}};
}

std::string summary_markdown(const std::vector<SeriesSummary>& series) {
  std::string md =
      "| series | dataset | budget | problems | accuracy | 95% CI | pass@k | unparsed | "
      "no answer | cut | serial steps | tokens |\n"
      "|---|---|---:|---:|---:|---|---|---:|---:|---:|---:|---:|\n";
  for (const SeriesSummary& s : series)
    for (const BudgetStats& st : s.budgets) {
      std::string pk;
      for (size_t k = 0; k < st.pass_at_k.size(); ++k)
        pk += fmt::format("{}pass@{} {:.1f}%", k ? ", " : "", k + 1, 100 * st.pass_at_k[k]);
      md += fmt::format(
          "| {} | {} | {} | {} | {:.1f}% | {:.1f}–{:.1f}% | {} | {} | {} | {} | {:.0f} | {:.0f} "
          "|\n",
          s.label, s.config.value("dataset", ""), st.budget, st.problems, 100 * st.accuracy,
          100 * st.ci_low, 100 * st.ci_high, pk, st.unparsed, st.no_answer, st.cut,
          st.mean_serial_steps, st.mean_tokens);
    }
  std::string notes;
  for (const SeriesSummary& s : series) {
    size_t n = 0;
    for (const auto& [b, k] : s.not_started) n = std::max(n, k);
    if (n > 0)
      notes += fmt::format(
          "\n{}: {} runs could not start (see \"error\" in results.jsonl); they are not scored\n",
          s.label, n);
  }
  for (const SeriesSummary& s : series)
    if (s.judged > 0)
      notes += fmt::format("\n{}: collaboration score {:.2f} (1..6, judged runs: {})\n", s.label,
                           s.collaboration_score, s.judged);
  for (const SeriesSummary& s : series)
    if (s.config.contains("note") && s.config["note"].is_string() &&
        !s.config["note"].get<std::string>().empty())
      notes += "\n" + s.label + ": " + s.config["note"].get<std::string>() + "\n";
  return md + notes;
}

std::string write_report(const fs::path& out, const std::vector<SeriesSummary>& series) {
  std::error_code ec;
  fs::create_directories(out, ec);
  write_text(out / "summary.json", dump_json(summary_json(series), 2) + "\n");
  write_text(out / "summary.md", summary_markdown(series));
  // Plot data: one gnuplot index block per series.
  std::string dat;
  int64_t lo = INT64_MAX, hi = 0;
  for (const SeriesSummary& s : series) {
    dat += "# " + s.label + "\n";
    for (const BudgetStats& st : s.budgets) {
      dat += fmt::format("{} {:.6f} {:.6f} {:.6f}\n", st.budget, 100 * st.accuracy, 100 * st.ci_low,
                         100 * st.ci_high);
      lo = std::min(lo, st.budget);
      hi = std::max(hi, st.budget);
    }
    dat += "\n\n";
  }
  write_text(out / "accuracy.dat", dat);
  std::string plot;
  for (size_t i = 0; i < series.size(); ++i)
    plot += fmt::format("{}{} index {} using 1:2:3:4 with yerrorlines lw 2 title {}",
                        i ? ", " : "plot ", gp_quote((out / "accuracy.dat").string()), i,
                        gp_quote(series[i].label));
  std::string head =
      "set xlabel 'serial steps (forward passes)'\nset ylabel 'accuracy, %'\n"
      "set yrange [0:100]\nset grid\nset key top left\n";
  if (hi >= 4 * lo && lo > 0) head += "set logscale x 2\n";
  head += "set offsets graph 0.03, graph 0.03, 0, 0\n";
  const std::string svg_term = "set terminal svg size 800,500 dynamic enhanced\n";
  const std::string png_term = "set terminal pngcairo size 800,500\n";
  // accuracy.gp, for the reader, writes both files itself; the report runs gnuplot once per
  // picture with its output on stdout, so that the bytes go through the checked writer (a full
  // disk is an error, and a picture is whole or absent).
  write_text(out / "accuracy.gp",
             head + svg_term + "set output " + gp_quote((out / "accuracy.svg").string()) + "\n" +
                 plot + "\n" + png_term + "set output " +
                 gp_quote((out / "accuracy.png").string()) + "\n" + plot + "\n");
  for (const auto& [name, term] :
       {std::pair{"accuracy.svg", svg_term}, {"accuracy.png", png_term}}) {
    // The picture's own script, removed once gnuplot has run.
    const fs::path gp = out / (std::string(name) + ".gp.tmp");
    write_text(gp, head + term + plot + "\n");
    std::string bytes;
    const std::string note = run_gnuplot(gp, &bytes);
    std::error_code rm;
    fs::remove(gp, rm);
    if (!note.empty()) return note;
    write_text(out / name, bytes);
  }
  return "";
}

}  // namespace hogwild::eval
