// Errors of the HTTP API in OpenAI's shape (docs/SERVER.md "Errors"):
//   {"error": {"message": "...", "type": "invalid_request_error", "param": "temperature" | null,
//              "code": "..." | null}}
// Every client mistake is an ApiError with a 4xx status; the server turns it into that body.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace hogwild::server {

/// One API error. status: HTTP status (400, 401, 404, 409, 413, 429, 503, 500).
/// type: OpenAI's error type ("invalid_request_error", "authentication_error", "not_found_error",
/// "rate_limit_error", "server_error"). param: the request field at fault ("" = none).
/// code: a machine-readable reason ("" = none), e.g. "context_length_exceeded".
struct ApiError : std::runtime_error {
  int status;
  std::string type, param, code;
  ApiError(int status_, std::string type_, std::string message, std::string param_ = "",
           std::string code_ = "")
      : std::runtime_error(std::move(message)),
        status(status_),
        type(std::move(type_)),
        param(std::move(param_)),
        code(std::move(code_)) {}
};

/// A 400 invalid_request_error about `param`.
inline ApiError bad_request(std::string message, std::string param = "", std::string code = "") {
  return ApiError(400, "invalid_request_error", std::move(message), std::move(param),
                  std::move(code));
}

/// The JSON body of an error (valid UTF-8: invalid bytes in the message become U+FFFD).
nlohmann::json error_json(const ApiError& e);

/// OpenAI's error type for a bare HTTP status (the library's own 404 / 405 / 413 / 414 ...).
ApiError error_for_status(int status);

}  // namespace hogwild::server
