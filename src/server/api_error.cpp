#include "server/api_error.h"

#include "hogwild/transcript.h"

namespace hogwild::server {

nlohmann::json error_json(const ApiError& e) {
  nlohmann::json err = {
      {"message", utf8_lossy(e.what())}, {"type", e.type}, {"param", nullptr}, {"code", nullptr}};
  if (!e.param.empty()) err["param"] = utf8_lossy(e.param);
  if (!e.code.empty()) err["code"] = e.code;
  return {{"error", err}};
}

ApiError error_for_status(int status) {
  switch (status) {
    case 400:
      return ApiError(400, "invalid_request_error", "the request could not be read");
    case 401:
      return ApiError(401, "authentication_error", "missing or wrong API key", "",
                      "invalid_api_key");
    case 404:
      return ApiError(404, "not_found_error",
                      "no such endpoint; see GET /v1/models, POST /v1/chat/completions, POST "
                      "/v1/completions",
                      "", "unknown_url");
    case 405:
      return ApiError(405, "invalid_request_error", "this method is not allowed on this path");
    case 413:
      return ApiError(413, "invalid_request_error",
                      "the request body is too large; send a smaller request (see the server's "
                      "--max-body-bytes)",
                      "", "request_too_large");
    case 414:
      return ApiError(414, "invalid_request_error", "the request URI is too long");
    case 416:
      return ApiError(416, "invalid_request_error", "range not satisfiable");
    default:
      if (status >= 500) return ApiError(status, "server_error", "internal server error");
      return ApiError(status, "invalid_request_error", "bad request");
  }
}

}  // namespace hogwild::server
