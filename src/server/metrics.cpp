#include "server/metrics.h"

#include <fmt/format.h>

#include <utility>

namespace hogwild::server {

namespace {

// One Prometheus sample with its HELP and TYPE lines.
void put_metric(std::string& out, const char* name, const char* type, const char* help, double v,
                const char* labels = "") {
  out +=
      fmt::format("# HELP {} {}\n# TYPE {} {}\n{}{} {}\n", name, help, name, type, name, labels, v);
}

// The families per method (Job::method): requests by outcome, tokens, the stages' histograms.
void put_method_metrics(std::string& out, const SchedulerStats& st) {
  auto by_method = [&out, &st](const char* name, const char* type, const char* help, auto&& value) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
    for (const auto& [method, ms] : st.by_method)
      value(name, fmt::format("method=\"{}\"", method), ms);
  };
  by_method(
      "hogwild_requests_total", "counter",
      "Requests answered, by method and outcome (rejected: 429 at the queue's limit, 503 "
      "while shutting down).",
      [&out](const char* name, const std::string& labels, const MethodStats& ms) {
        for (const auto& [outcome, n] : {std::pair<const char*, int64_t>{"finished", ms.finished},
                                         {"cancelled", ms.cancelled},
                                         {"failed", ms.failed},
                                         {"rejected", ms.rejected}})
          out += fmt::format("{}{{{},outcome=\"{}\"}} {}\n", name, labels, outcome, n);
      });
  by_method("hogwild_prompt_tokens_total", "counter",
            "Prompt tokens prefilled, of sessions that ended, by method.",
            [&out](const char* name, const std::string& labels, const MethodStats& ms) {
              out += fmt::format("{}{{{}}} {}\n", name, labels, ms.prompt_tokens);
            });
  by_method("hogwild_generated_tokens_total", "counter",
            "Tokens decoded (sampled by all workers), by method.",
            [&out](const char* name, const std::string& labels, const MethodStats& ms) {
              out += fmt::format("{}{{{}}} {}\n", name, labels, ms.generated_tokens);
            });
  auto hist = [&](const char* name, const char* help, Histogram MethodStats::*h) {
    by_method(name, "histogram", help,
              [&out, h](const char* n, const std::string& labels, const MethodStats& ms) {
                out += (ms.*h).prometheus_series(n, labels);
              });
  };
  hist("hogwild_request_prepare_seconds",
       "From a request read whole to its submission to the engine thread (waiting for an HTTP "
       "thread, parsing, chat template, tokenization).",
       &MethodStats::prepare_seconds);
  hist("hogwild_request_queue_seconds",
       "From a request's submission to the end of its first engine forward (admission, then "
       "its first prompt chunk).",
       &MethodStats::queue_seconds);
  hist("hogwild_time_to_first_token_seconds",
       "From a request read whole to its first sampled token.", &MethodStats::ttft_seconds);
  hist("hogwild_inter_token_seconds",
       "Between consecutive engine forwards that gave a session tokens.",
       &MethodStats::itl_seconds);
}

// The engine's families: serial steps, notes, the KV cache, the prefix cache, sessions, forwards.
void put_engine_metrics(std::string& out, const SchedulerStats& st) {
  auto metric = [&out](const char* name, const char* type, const char* help, double v) {
    put_metric(out, name, type, help, v);
  };
  out += fmt::format(
      "# HELP hogwild_serial_step_seconds Wall time of a serial step (one forward of a "
      "session).\n# TYPE hogwild_serial_step_seconds summary\nhogwild_serial_step_seconds_sum "
      "{}\nhogwild_serial_step_seconds_count {}\n",
      st.step_seconds, st.serial_steps);
  metric("hogwild_notes_inserted_total", "counter", "User notes inserted by live steering.",
         static_cast<double>(st.notes_inserted));
  metric("hogwild_kv_cache_tokens", "gauge", "Tokens held in the KV cache by live sessions.",
         static_cast<double>(st.cache.tokens));
  metric("hogwild_kv_cache_blocks", "gauge", "Cache blocks held by live sessions.",
         static_cast<double>(st.cache.blocks));
  metric("hogwild_kv_cache_reserved_tokens", "gauge",
         "KV tokens reserved by running sessions (what each can fill; admission counts them).",
         static_cast<double>(st.cache.kv_reserved));
  metric("hogwild_kv_cache_capacity_tokens", "gauge",
         "KV tokens the engine may reserve (0: no limit).",
         static_cast<double>(st.cache.kv_capacity));
  // vLLM's names: vllm:prefix_cache_queries / vllm:prefix_cache_hits (tokens).
  metric("hogwild_prefix_cache_queries_total", "counter",
         "Prompt tokens looked up in the prefix cache (every admitted session's whole prompt).",
         static_cast<double>(st.cache.prefix_query_tokens));
  metric("hogwild_prefix_cache_hits_total", "counter",
         "Prompt tokens shared from the prefix cache instead of prefilled.",
         static_cast<double>(st.cache.prefix_hit_tokens));
  metric("hogwild_prefix_cache_hit_rate", "gauge",
         "prefix_cache_hits_total / prefix_cache_queries_total (0 before any query).",
         st.cache.prefix_query_tokens > 0 ? static_cast<double>(st.cache.prefix_hit_tokens) /
                                                static_cast<double>(st.cache.prefix_query_tokens)
                                          : 0.0);
  metric("hogwild_sessions_active", "gauge", "Sessions in the engine's forwards.",
         static_cast<double>(st.cache.active_sessions));
  metric("hogwild_sessions_queued", "gauge", "Sessions waiting for KV memory or a slot.",
         static_cast<double>(st.cache.queued_sessions));
  out +=
      st.forward_sessions.prometheus("hogwild_forward_sessions", "Sessions in one engine forward.");
  out += st.forward_prefills.prometheus("hogwild_forward_prefills",
                                        "Sessions fed a prompt chunk in one engine forward.");
  metric("hogwild_forward_sessions_max", "gauge", "The most sessions one engine forward held.",
         static_cast<double>(st.forward_sessions_max));
}

}  // namespace

std::string metrics_text(const MetricsCounters& c, const SchedulerStats* st) {
  std::string out;
  put_metric(out, "hogwild_model_loaded", "gauge", "1 once the model is loaded.", c.ready ? 1 : 0);
  put_metric(out, "hogwild_http_requests_total", "counter", "HTTP requests received.",
             static_cast<double>(c.http_requests));
  put_metric(out, "hogwild_http_errors_total", "counter", "HTTP responses with a status >= 400.",
             static_cast<double>(c.http_errors));
  if (!st) return out;
  put_metric(out, "hogwild_requests_running", "gauge", "Requests whose sessions run.",
             static_cast<double>(st->running));
  put_metric(out, "hogwild_requests_queued", "gauge", "Requests waiting for the engine.",
             static_cast<double>(st->queued));
  put_method_metrics(out, *st);
  put_engine_metrics(out, *st);
  return out;
}

}  // namespace hogwild::server
