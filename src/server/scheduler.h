// The server's engine thread (docs/SERVER.md "Engine thread"): ONE thread owns the
// GenerationEngine (and so the backend) and steps every session; HTTP threads hand requests,
// cancels and notes over through a mutex-guarded command list and get events back through each
// request's Channel. The queue of requests is bounded (429 beyond it); draining stops new
// requests (503) and lets the others end.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/channel.h"
#include "server/generation.h"
#include "server/histogram.h"

namespace hogwild::server {

/// One request: n choices, each one session.
struct Job {
  std::string id;        // "chatcmpl-..." / "cmpl-...": the response id, also the steering id
  bool hogwild = false;  // content = the answer (else the text of the single worker)
  // For /metrics: "plain", "hogwild", "self_consistency" (independent layout) or
  // "skeleton_of_thought" (kMethods).
  std::string method = "plain";
  std::vector<GenerationRequest> choices;
  std::vector<std::string> stop;  // stop strings (plain: on the text; hogwild: on the answer)
  // When the HTTP handler took the request, before parsing it (the epoch when unknown): the time
  // to first token and the preparation time (parse, chat template, tokenization) count from it.
  std::chrono::steady_clock::time_point received{};
};

/// The methods /metrics tells apart (Job::method).
inline constexpr const char* kMethods[] = {"plain", "hogwild", "self_consistency",
                                           "skeleton_of_thought"};

/// The counters of one method's requests for /metrics (monotonic): outcomes as SchedulerStats
/// counts them, tokens, and the request stages' histograms (seconds, as SchedulerStats's).
struct MethodStats {
  int64_t finished = 0, cancelled = 0, failed = 0, rejected = 0;
  int64_t prompt_tokens = 0, generated_tokens = 0;
  Histogram prepare_seconds{Histogram::seconds_bounds()};
  Histogram queue_seconds{Histogram::seconds_bounds()};
  Histogram ttft_seconds{Histogram::seconds_bounds()};
  Histogram itl_seconds{Histogram::seconds_bounds()};
};

/// Counters for /metrics (monotonic unless said otherwise).
struct SchedulerStats {
  int64_t running = 0, queued = 0;  // gauges: requests whose sessions run / wait
  int64_t requests_finished = 0, requests_cancelled = 0, requests_failed = 0;
  int64_t requests_rejected = 0;  // refused by submit: 429 (queue full) or 503 (shutting down)
  int64_t prompt_tokens = 0, generated_tokens = 0;
  int64_t serial_steps = 0;
  double step_seconds = 0;  // summed wall time between consecutive forwards of a session
  int64_t notes_inserted = 0;
  EngineGauges cache;  // gauges of the engine
  // Seconds, per request: Job::received to submit (parse, chat template, tokenization); submit
  // to the end of the request's first forward (waiting for the engine thread's step and for
  // admission, then its first prompt chunk); received to its first token. Per session: between
  // consecutive forwards that gave it tokens.
  Histogram prepare_seconds{Histogram::seconds_bounds()};
  Histogram queue_seconds{Histogram::seconds_bounds()};
  Histogram ttft_seconds{Histogram::seconds_bounds()};
  Histogram itl_seconds{Histogram::seconds_bounds()};
  // Per engine forward: the sessions in it, and those of them fed a prompt chunk.
  Histogram forward_sessions{Histogram::count_bounds()};
  Histogram forward_prefills{Histogram::count_bounds()};
  int64_t forward_sessions_max = 0;  // the most sessions one forward held
  // The request counters, tokens and stage histograms above, per Job::method (every method of
  // kMethods present).
  std::map<std::string, MethodStats> by_method;
};

class Scheduler {
 public:
  /// make_engine builds the engine on the engine thread (which alone uses it).
  /// max_requests: requests admitted at once (running + queued).
  Scheduler(std::function<std::unique_ptr<GenerationEngine>()> make_engine, size_t max_requests);
  ~Scheduler();

  /// Admits a request; its events arrive on the returned channel, the first being `accepted`
  /// (or `accepted` with error set when the engine refused it). Throws ApiError 429 when
  /// max_requests are in, 503 while draining.
  std::shared_ptr<Channel> submit(Job job);
  /// The client of request `id` went away: its sessions stop within one serial step.
  void cancel(const std::string& id);
  /// Live steering of request `id`: a note by `author`; blocks until the engine thread took it
  /// (within one serial step). Throws ApiError 404 (no request has this id), 409 (not a hogwild
  /// request, or it already ended: the last 65536 ended ids are remembered).
  void steer(const std::string& id, const std::string& author, const std::string& text);
  /// Refuses new requests from now on (503).
  void drain();
  /// Stops every request (cancel), e.g. when draining took too long.
  void cancel_all();
  /// Requests admitted and not yet answered.
  size_t active() const;
  SchedulerStats stats() const;
  /// Stops the engine thread (after cancel_all); joins it.
  void stop();

 private:
  struct Request;
  struct Command;
  class ChoiceObserver;

  void loop(std::function<std::unique_ptr<GenerationEngine>()> make);
  void poll();  // engine thread: commands in, finished sessions out
  void run_command(Command& c);
  // Engine thread, for run_command: submits every choice of a request as a session and sends
  // `accepted` (with the error when the engine refused one: the request is then answered).
  void start_request(const std::shared_ptr<Request>& req);
  // Engine thread, for a steer command: inserts the note into every running session of request
  // `id`. Throws ApiError 404 (no such request), 409 (a plain completion, or it has ended).
  void insert_note(const std::string& id, const std::string& author, const std::string& text);
  void collect();
  // A request ended: steering it is 409 (ended), not 404 (unknown), for the last
  // kEndedRemembered ids.
  void remember_ended(const std::string& id, bool hogwild);
  // The per-method counters of a request's method (PRECONDITION: m_ held).
  MethodStats& method_stats(const Job& job) { return stats_.by_method[job.method]; }

  mutable std::mutex m_;
  std::condition_variable cv_;
  std::vector<Command> commands_;
  size_t max_requests_;
  size_t admitted_ = 0;
  bool draining_ = false, stopping_ = false;
  SchedulerStats stats_;  // guarded by m_ (engine thread updates under the lock)

  // Engine thread only.
  std::unique_ptr<GenerationEngine> engine_;
  std::map<std::string, std::shared_ptr<Request>> requests_;
  std::map<SessionId, std::pair<std::shared_ptr<Request>, int>> sessions_;  // -> (request, choice)
  std::vector<SessionId> to_cancel_;  // sessions that met a stop string in the last engine step
  static constexpr size_t kEndedRemembered = 65536;
  std::map<std::string, bool> ended_;    // ended request id -> hogwild (ids are random, unique)
  std::deque<std::string> ended_order_;  // oldest first

  std::thread thread_;
};

}  // namespace hogwild::server
