#include "server/http_parse.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <vector>

#include "server/api_error.h"

namespace hogwild::server {

namespace {

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return {};
  const size_t b = s.find_last_not_of(" \t");
  return s.substr(a, b - a + 1);
}

const char* reason(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 501:
      return "Not Implemented";
    case 505:
      return "HTTP Version Not Supported";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

// Text of the request for an error message: at most `max` bytes, bytes outside printable
// ASCII as \xNN.
std::string printable(const std::string& s, size_t max) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    const auto ch = static_cast<unsigned char>(s[i]);
    if (ch >= 0x20 && ch < 0x7f)
      out += static_cast<char>(ch);
    else
      out += fmt::format("\\x{:02x}", ch);
  }
  if (s.size() > max) out += "...";
  return out;
}

// Sets `refusal`; returns Framing::refused.
Framing refuse(HttpRefusal& refusal, int status, std::string message, std::string code = "") {
  refusal = {status, std::move(message), std::move(code)};
  return Framing::refused;
}

// The 431 for a head over kMaxHead bytes.
Framing head_too_large(HttpRefusal& refusal) {
  return refuse(refusal, 431,
                fmt::format("the request head (request line and headers) is over {} bytes; send "
                            "fewer or shorter headers",
                            kMaxHead),
                "headers_too_large");
}

// The 413 for a chunked body past max_body_bytes.
Framing chunked_too_large(HttpRefusal& refusal, size_t max_body_bytes) {
  return refuse(refusal, 413,
                fmt::format("the chunked request body passed this server's limit of {} bytes "
                            "(--max-body-bytes); send a smaller request",
                            max_body_bytes),
                "request_too_large");
}

// Drops the empty lines before a request line from the front of `in` (RFC 9112 §2.2). Returns the
// size of the head at its front, the blank line that ends it included; npos while it is not whole.
size_t head_end(std::string& in) {
  size_t lead = 0;
  while (lead < in.size() && (in[lead] == '\r' || in[lead] == '\n')) ++lead;
  if (lead) in.erase(0, lead);
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '\n') continue;
    if (i + 1 < in.size() && in[i + 1] == '\n') return i + 2;
    if (i + 2 < in.size() && in[i + 1] == '\r' && in[i + 2] == '\n') return i + 3;
  }
  return std::string::npos;
}

// The lines of the head in[0, end), without their CR and without the blank line that ends it.
std::vector<std::string> head_lines(const std::string& in, size_t end) {
  std::vector<std::string> lines;
  size_t p = 0;
  while (p < end) {
    size_t nl = in.find('\n', p);
    std::string line = in.substr(p, nl - p);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    p = nl + 1;
    if (line.empty()) break;
    lines.push_back(std::move(line));
  }
  return lines;
}

// What is wrong with a request line ("" when nothing): "version" for an HTTP version other than
// 1.0 and 1.1, else the reason in words.
std::string request_line_problem(const std::string& rl) {
  const size_t sp1 = rl.find(' ');
  if (sp1 == std::string::npos || sp1 == 0) return "no method and target";
  const size_t sp2 = rl.find(' ', sp1 + 1);
  if (sp2 == std::string::npos) return "no HTTP version";
  if (sp2 == sp1 + 1) return "no target";
  if (rl.find(' ', sp2 + 1) != std::string::npos) return "more than three parts";
  for (size_t i = 0; i < sp1; ++i)
    if (!std::isalnum(static_cast<unsigned char>(rl[i])) && !std::strchr("!#$%&'*+-.^_`|~", rl[i]))
      return "the method is not a token";
  for (size_t i = sp1 + 1; i < sp2; ++i)
    if (static_cast<unsigned char>(rl[i]) <= 0x20 || static_cast<unsigned char>(rl[i]) >= 0x7f)
      return "the target holds a control or non-ASCII byte";
  const std::string version = rl.substr(sp2 + 1);
  if (version.rfind("HTTP/", 0) != 0) return "no HTTP version";
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return "version";
  return {};
}

// Takes the method and path of the request line (lines[0]) into `head`, then checks the request
// line, METHOD SP TARGET SP HTTP/1.x (RFC 9112 §3), and that every header line is a name and a
// colon: refused here, with the reason, rather than by the library's generic 400 on a connection
// it keeps open.
Framing check_lines(const std::vector<std::string>& lines, RequestHead& head,
                    HttpRefusal& refusal) {
  const std::string& rl = lines[0];
  const size_t sp1 = rl.find(' ');
  const size_t sp2 = sp1 == std::string::npos ? sp1 : rl.find(' ', sp1 + 1);
  head.method = rl.substr(0, std::min(sp1, size_t{32}));
  head.path = sp1 == std::string::npos ? std::string()
                                       : rl.substr(sp1 + 1, std::min(sp2 - sp1 - 1, size_t{512}));
  if (const std::string why = request_line_problem(rl); !why.empty())
    return refuse(refusal, why == "version" ? 505 : 400,
                  why == "version"
                      ? fmt::format("HTTP version '{}' is not supported; send HTTP/1.1 (or 1.0)",
                                    printable(rl.substr(sp2 + 1), 32))
                      : fmt::format("the request line '{}' is not 'METHOD /path HTTP/1.1' ({})",
                                    printable(rl, 128), why));
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string& h = lines[i];
    const size_t colon = h.find(':');
    if (colon == std::string::npos || colon == 0 || h[0] == ' ' || h[0] == '\t' ||
        h.find('\0') != std::string::npos)
      return refuse(refusal, 400,
                    fmt::format("the header line '{}' is not 'Name: value'", printable(h, 128)));
  }
  return Framing::whole;
}

// The headers that frame the body, as sent.
struct BodyHeaders {
  std::vector<std::string> lengths;  // the values of every Content-Length
  std::string coding;                // the Transfer-Encodings, lowercase, joined by ", "
  bool has_coding = false;
};

// Sets head.text to the request line and the header lines but the body's framing headers and
// Expect, which it returns (Expect: 100-continue as head.expect_continue).
BodyHeaders split_headers(const std::vector<std::string>& lines, RequestHead& head) {
  BodyHeaders b;
  std::string text = lines[0] + "\r\n";
  head.expect_continue = false;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string& h = lines[i];
    const size_t colon = h.find(':');
    const std::string name =
        colon == std::string::npos ? std::string() : lower(trim(h.substr(0, colon)));
    const std::string value =
        colon == std::string::npos ? std::string() : trim(h.substr(colon + 1));
    if (name == "content-length") {
      b.lengths.push_back(value);
      continue;
    }
    if (name == "transfer-encoding") {
      b.coding += (b.has_coding ? ", " : "") + lower(value);
      b.has_coding = true;
      continue;
    }
    if (name == "expect") {
      if (lower(value) == "100-continue") head.expect_continue = true;
      continue;
    }
    text += h + "\r\n";
  }
  head.text = std::move(text);
  return b;
}

// Checks the body's framing headers and sets head.length and head.chunked from them.
Framing check_body_headers(const BodyHeaders& b, size_t max_body_bytes, RequestHead& head,
                           HttpRefusal& refusal) {
  head.length = 0;
  head.chunked = false;
  if (b.has_coding) {
    if (b.coding != "chunked")
      return refuse(refusal, 501,
                    fmt::format("Transfer-Encoding '{}' is not supported; send the body with "
                                "Content-Length or as 'chunked'",
                                b.coding),
                    "unsupported_transfer_encoding");
    if (!b.lengths.empty())
      return refuse(refusal, 400,
                    "the request has both Transfer-Encoding and Content-Length; send only one");
    head.chunked = true;
  }
  for (const std::string& v : b.lengths) {
    if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos)
      return refuse(refusal, 400,
                    fmt::format("Content-Length '{}' is not a non-negative integer; give the "
                                "body's size in bytes",
                                v.substr(0, 64)));
    if (v != b.lengths[0])
      return refuse(refusal, 400,
                    "the request has several different Content-Length headers; send one");
  }
  if (!b.lengths.empty()) {
    const std::string& v = b.lengths[0];
    const size_t digits = v.size() - std::min(v.find_first_not_of('0'), v.size());
    const bool huge = digits > 18;
    const uint64_t n = huge ? UINT64_MAX : std::stoull(v);
    if (huge || n > max_body_bytes)
      return refuse(refusal, 413,
                    fmt::format("the request body is {} bytes, over this server's limit of {} "
                                "(--max-body-bytes); send a smaller request",
                                v.substr(0, 24), max_body_bytes),
                    "request_too_large");
    head.length = static_cast<size_t>(n);
  }
  return Framing::whole;
}

}  // namespace

HttpRefusal server_busy() {
  return {503, "the server is receiving too many request bodies at once; retry in a moment",
          "server_busy"};
}

Framing parse_head(std::string& in, size_t max_body_bytes, RequestHead& head,
                   HttpRefusal& refusal) {
  const size_t end = head_end(in);
  if (end == std::string::npos)
    return in.size() > kMaxHead ? head_too_large(refusal) : Framing::more;
  if (end > kMaxHead + 3) return head_too_large(refusal);
  const std::vector<std::string> lines = head_lines(in, end);
  in.erase(0, end);
  if (lines.empty()) return refuse(refusal, 400, "the request has no request line");
  if (check_lines(lines, head, refusal) == Framing::refused) return Framing::refused;
  return check_body_headers(split_headers(lines, head), max_body_bytes, head, refusal);
}

void ChunkedBody::reset() {
  std::string().swap(body_);  // the memory too, not only the bytes
  chunk_ = Chunk::size_line;
  chunk_left_ = raw_ = trailers_ = 0;
}

Framing ChunkedBody::line(const std::string& in, size_t& p, size_t max_body_bytes,
                          const Reserve& reserve, HttpRefusal& refusal) {
  const size_t nl = in.find('\n', p);
  std::string line = in.substr(p, nl - p);
  raw_ += nl + 1 - p;
  p = nl + 1;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (chunk_ == Chunk::trailers) {
    trailers_ += line.size() + 2;
    if (trailers_ > kMaxTrailers)
      return refuse(refusal, 431, "the trailers of the chunked request body are too long");
    return line.empty() ? Framing::whole : Framing::more;
  }
  const std::string hex = trim(line.substr(0, line.find(';')));
  if (hex.empty() || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
    return refuse(refusal, 400,
                  fmt::format("'{}' is not a chunk size; a chunked body is hex sizes, each "
                              "followed by that many bytes",
                              hex.substr(0, 32)));
  const size_t digits = hex.size() - std::min(hex.find_first_not_of('0'), hex.size());
  if (digits > 15) return chunked_too_large(refusal, max_body_bytes);
  const size_t n = std::stoull(hex, nullptr, 16);
  if (body_.size() + n > max_body_bytes) return chunked_too_large(refusal, max_body_bytes);
  if (n == 0) {
    chunk_ = Chunk::trailers;
    return Framing::more;
  }
  if (!reserve(n)) {
    refusal = server_busy();
    return Framing::refused;
  }
  chunk_left_ = n;
  chunk_ = Chunk::data;
  return Framing::more;
}

Framing ChunkedBody::feed(std::string& in, size_t max_body_bytes, const Reserve& reserve,
                          HttpRefusal& refusal) {
  size_t p = 0;
  Framing result = Framing::more;
  while (result == Framing::more) {
    if (chunk_ == Chunk::size_line || chunk_ == Chunk::trailers) {
      const size_t nl = in.find('\n', p);
      const size_t pending = (nl == std::string::npos ? in.size() : nl) - p;
      if (chunk_ == Chunk::size_line && pending > kMaxChunkLine)
        return refuse(refusal, 400, "a chunk size line of the request body is too long");
      if (nl == std::string::npos) {
        if (chunk_ == Chunk::trailers && trailers_ + pending > kMaxTrailers)
          return refuse(refusal, 431, "the trailers of the chunked request body are too long");
        break;
      }
      const bool trailer = chunk_ == Chunk::trailers;
      result = line(in, p, max_body_bytes, reserve, refusal);
      if (result == Framing::refused) return result;
      if (trailer || chunk_ == Chunk::trailers) continue;  // no framing check (as the last chunk)
    } else if (chunk_ == Chunk::data) {
      const size_t take = std::min(chunk_left_, in.size() - p);
      if (take == 0) break;
      body_.append(in, p, take);
      p += take;
      raw_ += take;
      chunk_left_ -= take;
      if (chunk_left_ == 0) chunk_ = Chunk::data_end;
    } else {  // data_end: CRLF (or LF) after a chunk's bytes
      if (p >= in.size()) break;
      size_t need = in[p] == '\r' ? 2 : 1;
      if (in.size() - p < need) break;
      if (in[p + need - 1] != '\n')
        return refuse(refusal, 400, "a chunk of the request body is longer than its size says");
      p += need;
      raw_ += need;
      chunk_ = Chunk::size_line;
    }
    if (raw_ > 2 * max_body_bytes + kMaxHead)  // the framing alone
      return chunked_too_large(refusal, max_body_bytes);
  }
  in.erase(0, p);
  return result;
}

std::string whole_request(const std::string& head_text, std::string_view body) {
  std::string request = head_text + fmt::format("Content-Length: {}\r\n\r\n", body.size());
  request += body;
  return request;
}

std::string refusal_response(const HttpRefusal& refusal) {
  const int status = refusal.status;
  const char* type = status == 503 ? "server_error" : "invalid_request_error";
  const std::string body = error_json(ApiError(status, type, refusal.message, "", refusal.code))
                               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n"
      "Connection: close\r\n{}\r\n{}",
      status, reason(status), body.size(), status == 503 ? "Retry-After: 1\r\n" : "", body);
}

}  // namespace hogwild::server
