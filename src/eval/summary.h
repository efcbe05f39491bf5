// Tables and plots of eval results (`hogwild eval` at the end of a run, `hogwild eval report`):
// per series (one result folder: method, workers, layout) and budget, the accuracy over problems
// (each problem's accuracy = the mean over its samples), a 95% confidence interval, pass@k, and
// the counts of unparsed / missing / cut answers; the mean collaboration score when judged.
//   CI: one sample per problem: the Wilson score interval of the solved fraction; several
//       samples: mean +- 1.96 * sd / sqrt(n) of the per-problem accuracies, clipped to [0, 1].
//   pass@k (k = 1..samples): the unbiased estimator 1 - C(n-c, k) / C(n, k) per problem (n
//       samples, c correct; Chen et al. 2021), averaged over problems.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hogwild::eval {

struct BudgetStats {
  int64_t budget = 0;
  size_t problems = 0;
  double accuracy = 0, ci_low = 0, ci_high = 0;
  std::vector<double> pass_at_k;                ///< [k-1] = pass@k
  size_t unparsed = 0, no_answer = 0, cut = 0;  ///< result lines with that status
  double mean_serial_steps = 0,
         mean_tokens = 0;  ///< per line: serial steps used, all workers' tokens
};

struct SeriesSummary {
  std::string label;      ///< e.g. "hogwild 2w combined" (+ " (paper)" with --compat paper)
  std::string dir;        ///< the result folder
  nlohmann::json config;  ///< its config.json
  int samples = 1;
  std::vector<BudgetStats> budgets;
  /// The judge's collaboration score (judge.h) over the runs that have one (a run's lines all
  /// carry its score; counted once per (problem, sample)): mean, and how many runs.
  double collaboration_score = 0;
  size_t judged = 0;
  /// Per budget: runs that could not start (result lines with "started": false, e.g. a prompt
  /// beyond the context). They are not scored: accuracy counts only runs that started.
  std::map<int64_t, size_t> not_started;
};

/// Statistics of one result folder's lines.
SeriesSummary summarize(const nlohmann::json& config, const std::vector<nlohmann::json>& lines,
                        const std::string& dir);

nlohmann::json summary_json(const std::vector<SeriesSummary>& series);

/// A Markdown table: one row per series and budget (accuracy with CI, pass@k, counts).
std::string summary_markdown(const std::vector<SeriesSummary>& series);

/// Writes summary.json, summary.md and the plot accuracy.svg + accuracy.png (accuracy vs serial
/// steps, one line per series, CI as error bars; gnuplot, Debian package gnuplot-nox) into `out`.
/// Returns "" or a note when the plots could not be made (gnuplot missing or failing); the
/// tables are written either way. Throws hogwild::Error when `out` cannot be written.
std::string write_report(const std::filesystem::path& out,
                         const std::vector<SeriesSummary>& series);

}  // namespace hogwild::eval
