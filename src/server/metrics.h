// The /metrics page (docs/SERVER.md "Metrics"): the server's counters and the scheduler's
// statistics in the Prometheus text format 0.0.4.
#pragma once

#include <cstdint>
#include <string>

#include "server/scheduler.h"

namespace hogwild::server {

/// The HTTP server's own counters.
struct MetricsCounters {
  bool ready = false;         // the model is loaded and the scheduler runs
  int64_t http_requests = 0;  // HTTP requests received
  int64_t http_errors = 0;    // responses with a status >= 400
};

/// The page: the counters, then (st non-null, once ready) requests running and queued, the
/// families per method (requests by outcome, tokens, stage histograms) and the engine's (serial
/// steps, notes, KV cache, prefix cache, sessions, forwards).
std::string metrics_text(const MetricsCounters& c, const SchedulerStats* st);

}  // namespace hogwild::server
