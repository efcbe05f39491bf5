// `hogwild serve`: an OpenAI-compatible HTTP server with per-worker streaming, live steering and a
// web page to watch the workers (src/server; docs/SERVER.md).
//
//   hogwild serve -m DIR [--host 127.0.0.1] [--port 8080] [--api-key KEY | --api-key-file F]
//       [--max-queue N] [--max-sessions N] [--kv-tokens N] [--device auto|cuda|cpu]
//       [--served-model-name NAME] [--max-context N] [--max-body-bytes N] [--threads N]
//       [--max-connections N] [--drain-timeout S] [--format NAME|FILE]
//       [--reasoning-parser auto|qwen3|deepseek_r1|none] [--quiet] [--no-prefix-cache]
//
// The server listens at once; /health answers 503 while the model loads (progress on stderr) and
// 200 when it is ready. SIGTERM / Ctrl-C drain: no new requests (503), running ones finish (or
// are cancelled after --drain-timeout seconds), then the process exits 0.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "apps/hogwild/backend_flags.h"
#include "apps/hogwild/commands.h"
#include "core/error.h"
#include "engine/model.h"
#include "engine/request.h"
#include "engine/warmup.h"
#include "hogwild/formatting.h"
#include "hogwild/request_check.h"
#include "server/http_server.h"
#include "server/reasoning.h"
#include "server/scheduler.h"
#include "server/server_engine.h"

namespace hogwild::cli {
namespace {

namespace fs = std::filesystem;
using server::HttpServer;

// Upper bounds of the server's flags: the HTTP pool starts its threads at once, so a mistyped
// count must not exhaust the host's processes (a thread each) or memory (a queue slot each).
constexpr int64_t kMaxHttpThreads = 4096;
constexpr int64_t kMaxQueue = 100000;
constexpr int64_t kMaxSessions = 4096;
constexpr int64_t kMaxConnections = 1000000;

struct ServeArgs {
  std::string model_dir, host = "127.0.0.1", api_key, api_key_file, model_name, format;
  std::string reasoning_parser = "auto";
  int port = 8080;
  int64_t max_queue = 128, max_sessions = 16, max_context = 0, threads = 0;
  int64_t max_body_bytes = 4 << 20, drain_timeout = 30, max_connections = 0;
  bool quiet = false, no_prefix_cache = false, no_warmup = false;
  DeviceFlags device;
};

std::atomic<int> g_stop_signal{0};
extern "C" void on_stop_signal(int sig) { g_stop_signal.store(sig); }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string read_key_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) fail("--api-key-file: cannot read '{}'; give a readable file holding the key", path);
  std::string key;
  std::getline(f, key);
  while (!key.empty() && (key.back() == '\r' || key.back() == ' ' || key.back() == '\t'))
    key.pop_back();
  if (key.empty()) fail("--api-key-file: '{}' is empty; its first line must be the key", path);
  return key;
}

// Everything loaded for serving; built on the loader thread, then read-only (except the backend,
// which only the engine thread uses).
struct Loaded {
  std::unique_ptr<Model> model;
  server::ServedModel served;
  std::unique_ptr<server::Scheduler> scheduler;
};

void load(const ServeArgs& a, Loaded& L, HttpServer& http) {
  const auto t0 = std::chrono::steady_clock::now();
  std::fprintf(stderr, "serve: loading %s (tokenizer, chat template, weights)\n",
               a.model_dir.c_str());
  ModelOptions mo;
  mo.model_dir = a.model_dir;
  mo.device = a.device.device;
  mo.kv_tokens = a.device.max_kv_tokens;
  L.model = Model::load(mo);
  Model& model = *L.model;
  if (!model.chat_template())
    std::fprintf(stderr, "serve: no chat template%s%s; /v1/chat/completions will refuse requests\n",
                 model.chat_template_error().empty() ? "" : ": ",
                 model.chat_template_error().c_str());
  server::ServedModel& m = L.served;
  const fs::path dir = fs::path(a.model_dir).lexically_normal();
  m.id = !a.model_name.empty()     ? a.model_name
         : !dir.filename().empty() ? dir.filename().string()
                                   : dir.parent_path().filename().string();
  static_cast<RequestModel&>(m) = request_model(model);  // what make_request reads of it
  m.generation = model.generation_config();
  m.config = model.config();
  // The rule of `hogwild run -c` (hogwild/request_check.h): no view beyond the model's context.
  check_max_context(a.max_context, m.config.max_position_embeddings);
  m.max_context = a.max_context > 0 ? a.max_context : m.config.max_position_embeddings;
  m.default_format =
      !a.format.empty()
          ? a.format
          : model_formatting_ref(a.model_dir,
                                 model.chat_template() ? model.chat_template()->source() : "",
                                 AnswerKind::boxed);
  m.default_formatting = resolve_formatting(m.default_format);
  m.reasoning = a.reasoning_parser != "none";
  m.reasoning_parser = a.reasoning_parser == "auto"
                           ? server::default_reasoning_parser(
                                 model.chat_template() ? model.chat_template()->source() : "")
                           : server::parse_reasoning_parser(a.reasoning_parser);
  m.device = model.device();
  // Decode batches of up to --max-sessions rows run once before the first request
  // (engine/warmup.h): their first run at each size is what would make early clients wait.
  if (const int64_t rows = std::min<int64_t>(a.max_sessions, model.backend().warmup_tokens());
      rows > 0 && !a.no_warmup) {
    std::vector<int32_t> prompt = model.tokenizer().encode("Hello", false);
    if (prompt.empty()) prompt = {0};
    const WarmupReport w = warm_up(model.backend(), model.codec(), prompt, rows);
    std::fprintf(stderr,
                 "serve: warmed up decode batches of 1 to %lld rows (%lld forwards) in %.1f s\n",
                 static_cast<long long>(rows), static_cast<long long>(w.forwards), w.seconds);
  }
  EngineOptions eo;
  eo.max_sessions = a.max_sessions;
  // Every admitted request may hold up to n (RequestLimits::max_n) sessions.
  eo.max_queue = (a.max_queue + a.max_sessions) * server::RequestLimits{}.max_n;
  eo.kv_tokens = a.device.max_kv_tokens;
  eo.prefix_cache = !a.no_prefix_cache;
  L.scheduler = std::make_unique<server::Scheduler>(
      [&model, eo] {
        return std::make_unique<server::ServerEngine>(model.backend(), model.codec(), eo);
      },
      static_cast<size_t>(a.max_queue + a.max_sessions));
  http.set_ready(&L.served, L.scheduler.get());
  std::fprintf(stderr,
               "serve: ready in %.1f s: model '%s' on %s, context %lld tokens, KV pool %s, hogwild "
               "formatting %s, reasoning parser %s\n",
               seconds_since(t0), m.id.c_str(), m.device.c_str(),
               static_cast<long long>(m.max_context),
               model.backend().kv_capacity_tokens() > 0
                   ? fmt::format("{} tokens", model.backend().kv_capacity_tokens()).c_str()
                   : "host memory",
               m.default_format.c_str(),
               std::string(server::reasoning_parser_name(m.reasoning_parser)).c_str());
}

// Checks the flags of `hogwild serve` before anything listens: the model directory and its
// tokenizer, each count within its range, the format and reasoning parser names; reads
// --api-key-file into a.api_key. Throws hogwild::Error naming the flag.
void check_serve_flags(ServeArgs& a) {
  std::error_code ec;
  if (a.model_dir.empty() || !fs::is_directory(a.model_dir, ec))
    fail("model directory '{}' does not exist; pass an HF model directory with -m", a.model_dir);
  if (!fs::exists(fs::path(a.model_dir) / "tokenizer.json", ec))
    fail("{}/tokenizer.json is missing; hogwild serve needs the model's tokenizer", a.model_dir);
  if (a.port < 0 || a.port > 65535) fail("--port {}: give 0..65535 (0 = any free port)", a.port);
  if (a.max_queue < 0 || a.max_queue > kMaxQueue)
    fail("--max-queue must be 0..{} requests, got {}", kMaxQueue, a.max_queue);
  if (a.max_sessions < 1 || a.max_sessions > kMaxSessions)
    fail("--max-sessions must be 1..{}, got {}", kMaxSessions, a.max_sessions);
  if (a.max_context < 0) fail("--max-context must be >= 0 tokens (0 = the model's context)");
  if (a.max_body_bytes < 1024) fail("--max-body-bytes must be >= 1024");
  if (a.threads < 0 || a.threads > kMaxHttpThreads)
    fail("--threads must be 0..{} (0 = enough for every admitted request, at most {}), got {}",
         kMaxHttpThreads, kMaxHttpThreads, a.threads);
  if (a.drain_timeout < 0) fail("--drain-timeout must be >= 0 seconds");
  if (a.max_connections < 0 || a.max_connections > kMaxConnections)
    fail("--max-connections must be 0..{} (0 = from the open-file limit), got {}", kMaxConnections,
         a.max_connections);
  if (!a.format.empty()) resolve_formatting(a.format);  // a name or a file; throws saying why
  if (a.reasoning_parser != "auto") try {
      server::parse_reasoning_parser(a.reasoning_parser);
    } catch (const Error& e) {
      fail("--reasoning-parser: {} (or auto: from the model's chat template)", e.what());
    }
  if (!a.api_key_file.empty()) a.api_key = read_key_file(a.api_key_file);
}

// The HTTP server's options from the flags: one worker thread per admitted request plus 16
// unless --threads says otherwise.
server::ServerOptions http_options(const ServeArgs& a) {
  server::ServerOptions o;
  o.host = a.host;
  o.port = a.port;
  o.api_key = a.api_key;
  o.max_body_bytes = static_cast<size_t>(a.max_body_bytes);
  // Every admitted request may hold a worker thread (an open stream) while others poll /health
  // or /metrics, or are refused with 429. Connections still sending their request hold none (the
  // reception reads them, src/server/reception.h); past the threads, whole requests wait for one.
  o.threads = static_cast<size_t>(
      a.threads > 0 ? a.threads : std::min(a.max_queue + a.max_sessions + 16, kMaxHttpThreads));
  o.max_connections = static_cast<size_t>(a.max_connections);
  o.log_requests = !a.quiet;
  return o;
}

// Signals: SIGTERM / SIGINT only set a flag that serve's loop reads (whichever thread the
// kernel picks runs the handler; SA_RESTART keeps the library's accept() going); a client that
// goes away must not kill the process with SIGPIPE.
void install_stop_handlers() {
  g_stop_signal.store(0);
  struct sigaction sa = {};
  sa.sa_handler = on_stop_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

// After SIGTERM / SIGINT with the model loaded: new requests get 503, running ones have
// drain_timeout seconds to finish, then are cancelled; returns when none is running.
void drain(Loaded& L, HttpServer& http, int64_t drain_timeout) {
  http.set_draining();
  if (L.scheduler) {
    L.scheduler->drain();
    const auto t0 = std::chrono::steady_clock::now();
    while (L.scheduler->active() > 0 && seconds_since(t0) < static_cast<double>(drain_timeout))
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (L.scheduler->active() > 0) {
      std::fprintf(stderr, "serve: %zu requests still running after %lld s: cancelling them\n",
                   L.scheduler->active(), static_cast<long long>(drain_timeout));
      L.scheduler->cancel_all();
    }
    while (L.scheduler->active() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void serve(ServeArgs a) {
  check_serve_flags(a);
  // CUDA loads a kernel's module at its first launch by default (CUDA_MODULE_LOADING=LAZY): under
  // load, each forward that meets a new shape (prompt chunks beside decode rows) then stalls. A
  // warmed-up server loads them all when the CUDA runtime starts, unless the environment already
  // says how (docs/SERVER.md "Warm-up"). Set before any thread starts: setenv is not thread-safe.
  if (!a.no_warmup && a.device.device != "cpu") setenv("CUDA_MODULE_LOADING", "EAGER", 0);
  const server::ServerOptions o = http_options(a);
  install_stop_handlers();

  HttpServer http(o);
  http.bind();
  http.start();
  std::printf("hogwild serve: listening on http://%s:%d/\n", a.host.c_str(), http.bound_port());
  std::fflush(stdout);

  Loaded L;
  std::atomic<int> load_state{0};  // 0 loading, 1 ready, 2 failed
  std::string load_error;
  std::thread loader([&] {
    try {
      load(a, L, http);
      load_state = 1;
    } catch (const std::exception& e) {
      load_error = e.what();
      load_state = 2;
    }
  });
  while (g_stop_signal.load() == 0 && load_state != 2)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const int sig = g_stop_signal.load();
  if (load_state == 2) {
    loader.join();
    http.stop();
    fail("{}", load_error);
  }
  const char* name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
  if (load_state == 0) {  // nothing to drain; loading (file reads) cannot be interrupted
    std::fprintf(stderr, "serve: %s while the model was loading: stopped\n", name);
    http.stop();
    std::fflush(nullptr);
    std::_Exit(0);
  }
  std::fprintf(stderr, "serve: %s: draining\n", name);
  loader.join();
  drain(L, http, a.drain_timeout);
  http.stop();
  if (L.scheduler) L.scheduler->stop();
  std::fprintf(stderr, "serve: stopped\n");
}

}  // namespace

void register_serve(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  CLI::App* c = app.add_subcommand(
      "serve", "OpenAI-compatible HTTP server with per-worker streaming and a web page");
  c->add_option("-m,--model", a->model_dir, "Hugging Face model directory (required)");
  c->add_option("--host", a->host, "address to listen on (default 127.0.0.1: this machine only)");
  c->add_option("--port", a->port, "TCP port (default 8080; 0 = any free port, printed)");
  auto* key = c->add_option("--api-key", a->api_key, "require 'Authorization: Bearer KEY' on /v1");
  c->add_option("--api-key-file", a->api_key_file, "read the API key from the file's first line")
      ->excludes(key);
  c->add_option("--max-queue", a->max_queue,
                "requests waiting beyond --max-sessions before 429 (default 128)");
  c->add_option("--max-sessions", a->max_sessions, "requests served at once (default 16)");
  c->add_option("--max-context", a->max_context,
                "max tokens in a view (default: the model's max_position_embeddings)");
  c->add_option("--max-body-bytes", a->max_body_bytes, "largest request body (default 4 MiB)");
  c->add_option("--threads", a->threads,
                fmt::format("HTTP worker threads, each handling one whole request at a time "
                            "(default: --max-queue + --max-sessions + 16, at most {})",
                            kMaxHttpThreads));
  c->add_option("--max-connections", a->max_connections,
                "open connections; at the limit the longest idle make room (default: from the "
                "open-file limit, at most 65024)");
  c->add_option("--drain-timeout", a->drain_timeout,
                "seconds running requests get to finish on SIGTERM (default 30)");
  c->add_option("--served-model-name", a->model_name,
                "model name in the API (default: the model directory's name)");
  c->add_option("--format", a->format,
                "formatting of hogwild requests: built-in name or JSON file (default: the model's "
                "hogwild_format.json, else the model family's math one)");
  c->add_option("--reasoning-parser", a->reasoning_parser,
                "chat completions: the thinking (<think>...</think>; hogwild: the workers' steps) "
                "in reasoning_content, apart from the content: auto (default: from the chat "
                "template), qwen3, deepseek_r1, or none (everything in content)");
  c->add_flag("--quiet", a->quiet, "no request log lines");
  c->add_flag("--no-warmup", a->no_warmup,
              "start without running decode batches of 1..--max-sessions rows first and without "
              "loading every CUDA kernel at start (CUDA: the first request of each batch size "
              "then waits for its graph capture, the first forward of a shape for its kernels)");
  add_prefix_cache_flag(c, a->no_prefix_cache);
  add_device_flags(c, a->device);
  c->callback([a] { serve(*a); });
}

}  // namespace hogwild::cli
