// HTTP/1.x request framing for the reception (reception.h; docs/SERVER.md "Limits"): the request
// head (request line and headers, RFC 9112 §2-§6), the chunked body (RFC 9112 §7.1), the request
// handed to the handler, and the answer that refuses a request. Pure: no sockets, no clocks; what
// it refuses comes back as the status, message and code the reception answers with.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace hogwild::server {

constexpr size_t kMaxHead = 64u << 10;     // request line + headers
constexpr size_t kMaxChunkLine = 1024;     // chunk size line with its extensions
constexpr size_t kMaxTrailers = 8u << 10;  // trailer section of a chunked body

/// What reading the bytes received so far gave: more are needed, the part is whole, or the
/// request is refused (the HttpRefusal says how).
enum class Framing { more, whole, refused };

/// A refused request: the HTTP status (400, 413, 431, 501, 503, 505), the message and the API
/// error code ("" = none) of the answer (docs/SERVER.md "Errors").
struct HttpRefusal {
  int status = 0;
  std::string message, code;
};

/// The 503 `server_busy` for a body the server cannot hold now (the bodies being received hold
/// ReceptionOptions::max_buffered_bytes).
HttpRefusal server_busy();

/// The head of one request, as read by parse_head.
struct RequestHead {
  std::string method, path;  // for the log: at most 32 and 512 bytes of the request line
  std::string text;          // request line and headers handed on, each line ending CRLF, without
                             // Content-Length, Transfer-Encoding, Expect and the blank line
  size_t length = 0;         // Content-Length (0 when absent)
  bool chunked = false;      // Transfer-Encoding: chunked
  bool expect_continue = false;  // Expect: 100-continue
};

/// Reads the request head at the front of `in` (the bytes a connection received, not yet
/// consumed). Empty lines before the request line are dropped (RFC 9112 §2.2). Returns
///   - more: the head is not whole yet (`in` holds at most kMaxHead bytes of it);
///   - whole: `in` no longer holds the head, and every field of `head` is set;
///   - refused: `refusal` says why: 431 `headers_too_large` for a head over kMaxHead bytes; 400 for
///     a malformed request line or header line, a Content-Length that is not a non-negative
///     integer, several different ones, or one beside Transfer-Encoding; 505 for an HTTP version
///     other than 1.0 and 1.1; 501 `unsupported_transfer_encoding` for a coding other than
///     chunked; 413 `request_too_large` for a Content-Length over max_body_bytes.
/// head.method and head.path are written once a head is whole, before it is checked; when it is
/// not whole (more, 431) they keep the values they had (the previous request's on a kept-alive
/// connection).
Framing parse_head(std::string& in, size_t max_body_bytes, RequestHead& head, HttpRefusal& refusal);

/// A chunked request body (RFC 9112 §7.1), decoded as its bytes arrive; the limit holds for the
/// decoded bytes as soon as a chunk announces them.
class ChunkedBody {
 public:
  /// Reserves room for the n > 0 bytes a chunk announces; false when there is none (the request
  /// is then refused server_busy()).
  using Reserve = std::function<bool(size_t n)>;

  /// Decodes the front of `in`, and removes what it decoded from it. Returns
  ///   - more: every byte of `in` is consumed (at most a partial line is kept);
  ///   - whole: the last chunk and the trailers are read, body() is the decoded body, and `in`
  ///     holds what follows (a pipelined request);
  ///   - refused (`in` untouched): 413 `request_too_large` when the decoded bytes, or the raw
  ///     bytes past 2 max_body_bytes + kMaxHead, pass the limit; 400 for a chunk size that is not
  ///     hex, a size line over kMaxChunkLine bytes, or a chunk longer than its size; 431 for
  ///     trailers over kMaxTrailers bytes; server_busy() when `reserve` refuses.
  Framing feed(std::string& in, size_t max_body_bytes, const Reserve& reserve,
               HttpRefusal& refusal);
  /// The bytes decoded so far.
  const std::string& body() const { return body_; }
  /// Starts a new body, and frees the memory of the last one.
  void reset();

 private:
  enum class Chunk { size_line, data, data_end, trailers };
  // One line at the front of in[p..]: a chunk size (a data chunk, or the last chunk then the
  // trailers) or a trailer line; see feed.
  Framing line(const std::string& in, size_t& p, size_t max_body_bytes, const Reserve& reserve,
               HttpRefusal& refusal);
  Chunk chunk_ = Chunk::size_line;
  size_t chunk_left_ = 0;  // bytes of the current chunk still to come
  size_t raw_ = 0;         // raw bytes consumed (sizes, data, CRLFs, trailers)
  size_t trailers_ = 0;    // bytes of the trailer section so far
  std::string body_;
};

/// The request handed to the handler: `head_text` (RequestHead::text), then
/// "Content-Length: <body size>", the blank line, and `body`.
std::string whole_request(const std::string& head_text, std::string_view body);

/// The bytes of the answer that refuses a request and closes its connection: HTTP/1.1 `status`,
/// the error body in the API's JSON shape (type "server_error" for 503, else
/// "invalid_request_error"; docs/SERVER.md "Errors"), `Connection: close`, and `Retry-After: 1`
/// with a 503.
std::string refusal_response(const HttpRefusal& refusal);

}  // namespace hogwild::server
