// A fake OpenAI-compatible judge for the tests: a cpp-httplib server on a free loopback port that
// records every request to /v1/chat/completions and answers with a fixed chat completion (or a
// fixed status and body).
#pragma once

#include <httplib.h>

#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace hogwild::testing {

class FakeJudge {
 public:
  struct Seen {
    std::string path, authorization;
    nlohmann::json body;
  };
  FakeJudge() {
    server_.Post("/v1/chat/completions",
                 [this](const httplib::Request& req, httplib::Response& res) {
                   std::lock_guard<std::mutex> lock(mu_);
                   seen_.push_back({req.path, req.get_header_value("Authorization"),
                                    nlohmann::json::parse(req.body, nullptr, false)});
                   res.status = status_;
                   res.set_content(body_, "application/json");
                 });
    port_ = server_.bind_to_any_port("127.0.0.1");  // bound and listening: connections queue
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() before the loop runs would be lost (and join would wait for ever).
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeJudge() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  /// Answer with a chat completion whose message content is `content`.
  void reply(const std::string& content) {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = 200;
    body_ = nlohmann::json{{"id", "x"},
                           {"object", "chat.completion"},
                           {"choices",
                            {{{"index", 0},
                              {"message", {{"role", "assistant"}, {"content", content}}},
                              {"finish_reason", "stop"}}}}}
                .dump();
  }
  void reply_raw(int status, const std::string& body) {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = status;
    body_ = body;
  }
  std::vector<Seen> seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  int status_ = 200;
  std::string body_;
  std::vector<Seen> seen_;
};

}  // namespace hogwild::testing
