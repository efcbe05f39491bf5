#include "server/http_server.h"

#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <optional>
#include <random>

#include "core/error.h"
#include "server/api_error.h"
#include "server/connection.h"
#include "server/metrics.h"
#include "server/responses.h"
#include "server/web_assets.h"

namespace hogwild::server {

using json = nlohmann::json;

namespace {

constexpr auto kPoll = std::chrono::milliseconds(100);  // disconnect checks while waiting

void send_json(httplib::Response& res, int status, const json& j) {
  res.status = status;
  res.set_content(j.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) {
  if (e.status == 429) res.set_header("Retry-After", "1");
  if (e.status == 503) res.set_header("Retry-After", "5");
  send_json(res, e.status, error_json(e));
}

std::string random_id(const char* prefix) {
  thread_local std::mt19937_64 rng(std::random_device{}() ^
                                   std::hash<std::thread::id>{}(std::this_thread::get_id()));
  return fmt::format("{}{:016x}{:08x}", prefix, rng(), static_cast<uint32_t>(rng()));
}

// A user-supplied string for a log line: JSON-escaped, ASCII only, invalid bytes replaced.
std::string escaped(const std::string& s) {
  return json(s).dump(-1, ' ', true, json::error_handler_t::replace);
}

bool same_key(const std::string& a, const std::string& b) {  // constant time for equal lengths
  if (a.size() != b.size()) return false;
  unsigned char d = 0;
  for (size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i]);
  return d == 0;
}

std::mutex g_log;

}  // namespace

// cpp-httplib's request handling (routing, handlers, response writing) over a request the
// reception read whole (reception.h); the library's own accept loop and sockets are not used.
class HttpServer::Core : public httplib::Server {
 public:
  /// Serves the request `strm` yields (httplib::Server::process_request).
  bool serve(httplib::Stream& strm, bool close_connection, bool& connection_closed) {
    return process_request(strm, close_connection, connection_closed, nullptr);
  }
  /// The library ends streamed responses when its listening socket is gone: mark it present
  /// while serving (the reception owns the real one).
  void set_serving(bool on) { svr_sock_ = on ? 0 : INVALID_SOCKET; }
};

HttpServer::HttpServer(ServerOptions o) : opt_(std::move(o)), svr_(new Core) {
  started_unix_ = static_cast<int64_t>(std::time(nullptr));
  svr_->set_payload_max_length(opt_.max_body_bytes);
  // What the library's Keep-Alive header advertises; the reception enforces both.
  svr_->set_keep_alive_timeout(opt_.keep_alive_s);
  svr_->set_keep_alive_max_count(1000);
  ReceptionOptions ro;
  ro.max_body_bytes = opt_.max_body_bytes;
  ro.head_timeout_s = opt_.head_timeout_s;
  ro.body_timeout_s = opt_.body_timeout_s;
  ro.keep_alive_s = opt_.keep_alive_s;
  ro.write_timeout_s = opt_.write_timeout_s;
  ro.threads = std::max<size_t>(opt_.threads, 4);
  ro.max_connections = opt_.max_connections;
  ro.max_requests_per_connection = 1000;
  reception_ = std::make_unique<Reception>(
      ro,
      [this](httplib::Stream& strm, bool close_connection, bool& closed) {
        return svr_->serve(strm, close_connection, closed);
      },
      [this](const Refusal& r) {
        http_requests_ += 1;
        http_errors_ += 1;
        if (r.status == 503) http_rejected_ += 1;
        if (!opt_.log_requests) return;
        std::lock_guard<std::mutex> l(g_log);
        std::string method = escaped(r.method);  // as the library logs it: no quotes
        method = method.size() >= 2 ? method.substr(1, method.size() - 2) : method;
        std::fprintf(stderr, "http: %s %s %s -> %d\n", r.remote_addr.c_str(),
                     r.method.empty() ? "-" : method.c_str(),
                     r.path.empty() ? "-" : escaped(r.path).c_str(), r.status);
      });
  routes();
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::bind() { port_ = reception_->bind(opt_.host, opt_.port); }

void HttpServer::start() {
  svr_->set_serving(true);
  reception_->start();
  started_ = true;
}

void HttpServer::set_ready(const ServedModel* model, Scheduler* scheduler) {
  model_ = model;
  sched_ = scheduler;
  state_.store(State::ready);
}

void HttpServer::set_draining() { state_.store(State::draining); }

void HttpServer::stop() {
  if (!started_) return;
  started_ = false;
  svr_->set_serving(false);  // streamed responses end
  reception_->stop();
}

void HttpServer::require_ready() const {
  const State s = state_.load();
  if (s == State::loading)
    throw ApiError(503, "server_error", "the model is still loading; retry in a few seconds", "",
                   "model_loading");
  if (s == State::draining)
    throw ApiError(503, "server_error", "the server is shutting down", "", "shutting_down");
}

void HttpServer::routes() {
  httplib::Server& s = *svr_;
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    http_requests_ += 1;
    if (opt_.api_key.empty()) return httplib::Server::HandlerResponse::Unhandled;
    const bool guarded = req.path.rfind("/v1/", 0) == 0 || req.path == "/metrics";
    if (!guarded) return httplib::Server::HandlerResponse::Unhandled;
    std::string auth = req.get_header_value("Authorization");
    const std::string bearer = "Bearer ";
    std::string key = auth.rfind(bearer, 0) == 0 ? auth.substr(bearer.size()) : std::string();
    if (key.empty()) key = req.get_header_value("x-api-key");
    if (!same_key(key, opt_.api_key)) {
      send_error(res, ApiError(401, "authentication_error",
                               key.empty() ? "no API key given; send 'Authorization: Bearer KEY'"
                                           : "the API key is wrong",
                               "", "invalid_api_key"));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  s.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                  httplib::Response& res) {
    if (res.status == 429 || res.status == 503) http_rejected_ += 1;
    http_errors_ += 1;
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    // cpp-httplib caps form-encoded bodies (curl -d's default Content-Type) at 8192 bytes,
    // far below --max-body-bytes: say which header to send instead.
    if (res.status == 413 &&
        req.get_header_value("Content-Type").rfind("application/x-www-form-urlencoded", 0) == 0) {
      send_error(res, ApiError(413, "invalid_request_error",
                               "bodies sent as application/x-www-form-urlencoded (curl -d's "
                               "default) are limited to 8192 bytes; send the JSON with "
                               "'Content-Type: application/json'",
                               "", "request_too_large"));
      return httplib::Server::HandlerResponse::Handled;
    }
    send_error(res, error_for_status(res.status));
    return httplib::Server::HandlerResponse::Handled;
  }));
  s.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        send_error(res, ApiError(500, "server_error", "internal error: " + what));
      });
  if (opt_.log_requests)
    s.set_logger([](const httplib::Request& req, const httplib::Response& res) {
      std::lock_guard<std::mutex> l(g_log);
      std::fprintf(stderr, "http: %s %s %s -> %d\n", req.remote_addr.c_str(), req.method.c_str(),
                   escaped(req.path).c_str(), res.status);
    });
  api_routes();
  page_and_method_routes();
}

void HttpServer::api_routes() {
  httplib::Server& s = *svr_;
  s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    switch (state_.load()) {
      case State::loading:
        res.set_header("Retry-After", "5");
        return send_json(res, 503, {{"status", "loading"}});
      case State::draining:
        return send_json(res, 503, {{"status", "draining"}});
      case State::ready:
        return send_json(res, 200, {{"status", "ok"}, {"model", model_->id}});
    }
  });
  auto model_json = [this] {
    return json{{"id", model_->id},
                {"object", "model"},
                {"created", started_unix_},
                {"owned_by", "hogwild"},
                {"max_model_len", model_->max_context}};
  };
  s.Get("/v1/models", [this, model_json](const httplib::Request&, httplib::Response& res) {
    try {
      require_ready();
      send_json(res, 200, {{"object", "list"}, {"data", json::array({model_json()})}});
    } catch (const ApiError& e) {
      send_error(res, e);
    }
  });
  s.Get(R"(/v1/models/(.+))",
        [this, model_json](const httplib::Request& req, httplib::Response& res) {
          try {
            require_ready();
            if (req.matches[1] != model_->id)
              throw ApiError(404, "not_found_error",
                             fmt::format("The model '{}' does not exist; this server serves '{}'",
                                         req.matches[1].str(), model_->id),
                             "model", "model_not_found");
            send_json(res, 200, model_json());
          } catch (const ApiError& e) {
            send_error(res, e);
          }
        });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) { metrics(res); });
  s.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    completions(req, res, Endpoint::chat);
  });
  s.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    completions(req, res, Endpoint::completion);
  });
  s.Post(R"(/v1/hogwild/sessions/([^/]+)/messages)",
         [this](const httplib::Request& req, httplib::Response& res) { steer(req, res); });
}

void HttpServer::page_and_method_routes() {
  httplib::Server& s = *svr_;
  auto page = [](const httplib::Request& req, httplib::Response& res) {
    const WebAsset* a = find_web_asset(req.path == "/index.html" ? "/" : req.path);
    if (!a) return send_error(res, error_for_status(404));
    res.set_content(reinterpret_cast<const char*>(a->data), a->size, std::string(a->content_type));
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("Content-Security-Policy",
                   "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
                   "font-src 'self' data:; connect-src 'self'; object-src 'none'; "
                   "base-uri 'none'; frame-ancestors 'none'");
  };
  s.Get("/", page);
  s.Get("/index.html", page);
  s.Get(R"(/assets/.+)", page);

  // A known path with another method: 405 naming the methods it takes (RFC 9110 §15.5.6), not
  // the 404 of an unknown path.
  auto not_allowed = [](const char* allow) {
    return [allow](const httplib::Request& req, httplib::Response& res) {
      res.set_header("Allow", allow);
      send_error(res, ApiError(405, "invalid_request_error",
                               fmt::format("{} is not allowed on {}; use {}", req.method,
                                           escaped(req.path), allow),
                               "", "method_not_allowed"));
    };
  };
  // OPTIONS on a known path: 204 with Allow (no CORS headers: other origins stay refused).
  auto options = [](const char* allow) {
    return [allow](const httplib::Request&, httplib::Response& res) {
      res.status = 204;
      res.set_header("Allow", allow);
    };
  };
  for (const char* path :
       {"/v1/chat/completions", "/v1/completions", R"(/v1/hogwild/sessions/([^/]+)/messages)"}) {
    s.Options(path, options("POST"));
    s.Get(path, not_allowed("POST"));
    s.Put(path, not_allowed("POST"));
    s.Patch(path, not_allowed("POST"));
    s.Delete(path, not_allowed("POST"));
  }
  for (const char* path : {"/health", "/metrics", "/v1/models", R"(/v1/models/(.+))", "/",
                           "/index.html", R"(/assets/.+)"}) {
    s.Options(path, options("GET, HEAD"));
    s.Post(path, not_allowed("GET, HEAD"));
    s.Put(path, not_allowed("GET, HEAD"));
    s.Patch(path, not_allowed("GET, HEAD"));
    s.Delete(path, not_allowed("GET, HEAD"));
  }
}

void HttpServer::metrics(httplib::Response& res) {
  const bool ready = state_.load() != State::loading && sched_;
  MetricsCounters counters{ready, http_requests_.load(), http_errors_.load()};
  std::optional<SchedulerStats> st;
  if (ready) st = sched_->stats();
  res.set_content(metrics_text(counters, st ? &*st : nullptr),
                  "text/plain; version=0.0.4; charset=utf-8");
}

namespace {

/// What the response builder needs of a request: ids, the worker labels, the reasoning split
/// and the options echoed under "hogwild".
ResponseMeta response_meta(const CompletionRequest& cr, const std::vector<GenerationRequest>& gens,
                           Endpoint ep, const ServedModel& model, uint64_t seed,
                           const std::string& chat_prompt) {
  ResponseMeta meta;
  meta.id = random_id(ep == Endpoint::chat ? "chatcmpl-" : "cmpl-");
  meta.endpoint = ep;
  meta.model = model.id;
  meta.created = static_cast<int64_t>(std::time(nullptr));
  meta.n = cr.n;
  meta.hogwild = cr.hogwild.has_value();
  meta.include_usage = cr.include_usage;
  meta.worker_names = worker_names(gens[0]);
  meta.seed = seed;
  if (ep == Endpoint::chat && model.reasoning) {
    meta.reasoning_parser = model.reasoning_parser;
    meta.think_start = think_start(chat_prompt);
    meta.hogwild_reasoning = true;
    meta.include_reasoning = cr.include_reasoning;
  }
  if (cr.hogwild)
    meta.options = {
        {"workers", cr.hogwild->workers},
        {"layout", layout_name(cr.hogwild->layout)},
        {"budget", cr.hogwild->budget},
        {"collab_every", gens[0].options.collab_every >= 0 ? gens[0].options.collab_every
                                                           : gens[0].formatting.collab_check.every},
        {"format", gens[0].formatting.name}};
  if (cr.hogwild && cr.hogwild->skeleton) meta.options["skeleton"] = true;
  return meta;
}

/// The method a request runs, as /metrics labels it.
const char* method_name(const CompletionRequest& cr) {
  return !cr.hogwild                                 ? "plain"
         : cr.hogwild->skeleton                      ? "skeleton_of_thought"
         : cr.hogwild->layout == Layout::independent ? "self_consistency"
                                                     : "hogwild";
}

/// A streamed response's state, shared by the content provider's calls.
struct Stream {
  std::shared_ptr<Channel> ch;
  std::shared_ptr<ResponseBuilder> builder;
  std::shared_ptr<ConnectionProbe> probe;
  std::vector<Event> pending;
  Scheduler* sched;
  std::string id;
  bool started = false, ended = false;
};

/// Sends the events of st's channel as server-sent events; a closed connection cancels the job.
void stream_response(httplib::Response& res, std::shared_ptr<Stream> st);

}  // namespace

void HttpServer::completions(const httplib::Request& req, httplib::Response& res, Endpoint ep) {
  auto received = Reception::current_request_whole();
  if (received == std::chrono::steady_clock::time_point{})
    received = std::chrono::steady_clock::now();
  try {
    require_ready();
    const CompletionRequest cr = parse_completion_request(req.body, ep, model_->id, opt_.limits);
    uint64_t seed = 0;
    std::vector<GenerationRequest> gens;
    std::string chat_prompt;
    try {
      gens = build_generation(cr, *model_, opt_.limits, &seed, &chat_prompt);
    } catch (const Error& e) {  // tokenizer / formatting refusing this input
      throw bad_request(e.what());
    }
    const ResponseMeta meta = response_meta(cr, gens, ep, *model_, seed, chat_prompt);
    Job job;
    job.id = meta.id;
    job.hogwild = meta.hogwild;
    job.method = method_name(cr);
    job.choices = std::move(gens);
    job.stop = cr.stop;
    job.received = received;
    auto ch = sched_->submit(std::move(job));
    auto probe =
        Reception::current_socket() >= 0
            ? std::make_shared<ConnectionProbe>(Reception::current_socket())
            : std::make_shared<ConnectionProbe>(req.local_port, req.remote_addr, req.remote_port);

    // The engine's answer comes first: accepted, or refused with the reason.
    auto builder = std::make_shared<ResponseBuilder>(meta);
    std::vector<Event> pending;
    for (;;) {
      std::vector<Event> evs;
      ch->pop_all(evs, kPoll);
      if (!evs.empty()) {
        if (evs[0].kind == Event::Kind::accepted && evs[0].error)
          throw bad_request("the engine refused the request: " + *evs[0].error);
        pending.insert(pending.end(), std::make_move_iterator(evs.begin() + 1),
                       std::make_move_iterator(evs.end()));
        break;
      }
      if (probe->closed()) return sched_->cancel(meta.id);
    }
    if (!cr.stream) {
      for (auto& e : pending) builder->add(e);
      for (;;) {
        std::vector<Event> evs;
        const bool open = ch->pop_all(evs, kPoll);
        for (auto& e : evs) builder->add(e);
        if (!open) break;
        if (probe->closed()) return sched_->cancel(meta.id);  // nobody to answer
      }
      if (!builder->error().empty())
        throw ApiError(500, "server_error", "the session failed: " + builder->error(), "",
                       "session_failed");
      return send_json(res, 200, builder->response());
    }
    auto st = std::make_shared<Stream>(
        Stream{ch, builder, probe, std::move(pending), sched_, meta.id, false, false});
    stream_response(res, st);
  } catch (const ApiError& e) {
    send_error(res, e);
  }
}

namespace {

void stream_response(httplib::Response& res, std::shared_ptr<Stream> st) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [st](size_t, httplib::DataSink& sink) {
        std::string out;
        if (!st->started) {
          st->started = true;
          out = st->builder->stream_start();
          for (auto& e : st->pending) out += st->builder->add(e);
          st->pending.clear();
        }
        std::vector<Event> evs;
        const bool open = st->ch->pop_all(evs, kPoll);
        for (auto& e : evs) out += st->builder->add(e);
        if (!open) out += st->builder->stream_end();
        if (st->probe->closed() || (!out.empty() && !sink.write(out.data(), out.size()))) {
          st->sched->cancel(st->id);
          st->ended = true;
          return false;
        }
        if (!open) {
          st->ended = true;
          sink.done();
        }
        return true;
      },
      [st](bool) {
        if (!st->ended) st->sched->cancel(st->id);  // the library gave up on the connection
      });
}

}  // namespace

void HttpServer::steer(const httplib::Request& req, httplib::Response& res) {
  try {
    require_ready();
    const std::string id = req.matches[1];
    const NoteRequest note = parse_note_request(req.body);
    sched_->steer(id, note.author, note.text);
    send_json(res, 200, {{"object", "hogwild.note"}, {"session_id", id}, {"status", "queued"}});
  } catch (const ApiError& e) {
    send_error(res, e);
  }
}

}  // namespace hogwild::server
