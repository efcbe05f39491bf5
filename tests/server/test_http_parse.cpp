// HTTP/1.x request framing (src/server/http_parse.h): request heads as they arrive, their
// refusals with the exact status, message and code the reception answers (docs/SERVER.md
// "Limits"), chunked bodies cut at every byte, and the bytes of a refusal.
#include <gtest/gtest.h>

#include "server/http_parse.h"

namespace hogwild::server {
namespace {

constexpr size_t kLimit = 4u << 20;  // --max-body-bytes' default

// parse_head over `in`, expecting a refusal; returns it.
HttpRefusal refused_head(std::string in, size_t max_body_bytes = kLimit) {
  RequestHead head;
  HttpRefusal refusal;
  EXPECT_EQ(parse_head(in, max_body_bytes, head, refusal), Framing::refused) << in;
  return refusal;
}

TEST(HttpHead, ReadsAHeadSplitAcrossReadsAndKeepsWhatFollows) {
  const std::string full =
      "\r\nPOST /v1/completions HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
      "Expect: 100-Continue\r\nX-Y:  z \r\n\r\nhello";
  RequestHead head;
  HttpRefusal refusal;
  std::string in = full.substr(0, 40);  // ends after "Host: a"
  EXPECT_EQ(parse_head(in, kLimit, head, refusal), Framing::more);
  EXPECT_EQ(in, full.substr(2, 38));  // only the empty line before the request line is dropped
  in += full.substr(40);
  ASSERT_EQ(parse_head(in, kLimit, head, refusal), Framing::whole);
  EXPECT_EQ(head.method, "POST");
  EXPECT_EQ(head.path, "/v1/completions");
  EXPECT_EQ(head.text, "POST /v1/completions HTTP/1.1\r\nHost: a\r\nX-Y:  z \r\n");
  EXPECT_EQ(head.length, 5u);
  EXPECT_FALSE(head.chunked);
  EXPECT_TRUE(head.expect_continue);
  EXPECT_EQ(in, "hello");  // the body stays for the reader of the body
}

TEST(HttpHead, LfOnlyLinesAndChunkedCoding) {
  std::string in = "GET /health HTTP/1.0\nTransfer-Encoding: Chunked\n\n0\r\n";
  RequestHead head;
  HttpRefusal refusal;
  ASSERT_EQ(parse_head(in, kLimit, head, refusal), Framing::whole);
  EXPECT_EQ(head.text, "GET /health HTTP/1.0\r\n");
  EXPECT_TRUE(head.chunked);
  EXPECT_EQ(head.length, 0u);
  EXPECT_FALSE(head.expect_continue);
  EXPECT_EQ(in, "0\r\n");
}

TEST(HttpHead, MethodAndPathStayUntilAHeadIsWhole) {
  RequestHead head;
  head.method = "GET";
  head.path = "/before";
  HttpRefusal refusal;
  std::string in = "POST /after HTTP/1.1\r\n";
  EXPECT_EQ(parse_head(in, kLimit, head, refusal), Framing::more);
  EXPECT_EQ(head.method, "GET");
  EXPECT_EQ(head.path, "/before");
  in = "BAD\x01 /after HTTP/1.1\r\n\r\n";
  EXPECT_EQ(parse_head(in, kLimit, head, refusal), Framing::refused);
  EXPECT_EQ(head.method, "BAD\x01");  // for the log of the refusal
  EXPECT_EQ(head.path, "/after");
}

TEST(HttpHead, BadRequestLinesAre400NamingTheLineAndOtherVersions505) {
  HttpRefusal r = refused_head("GET /a b HTTP/1.1\r\n\r\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.message,
            "the request line 'GET /a b HTTP/1.1' is not 'METHOD /path HTTP/1.1' (more than three "
            "parts)");
  EXPECT_EQ(r.code, "");
  r = refused_head("GET /\x01\xff HTTP/1.1\r\n\r\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.message,
            "the request line 'GET /\\x01\\xff HTTP/1.1' is not 'METHOD /path HTTP/1.1' (the "
            "target holds a control or non-ASCII byte)");
  r = refused_head("hello\r\n\r\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.message,
            "the request line 'hello' is not 'METHOD /path HTTP/1.1' (no method and target)");
  r = refused_head("G(T / HTTP/1.1\r\n\r\n");
  EXPECT_EQ(r.message,
            "the request line 'G(T / HTTP/1.1' is not 'METHOD /path HTTP/1.1' (the method is not "
            "a token)");
  r = refused_head("GET / HTTP/2.0\r\n\r\n");
  EXPECT_EQ(r.status, 505);
  EXPECT_EQ(r.message, "HTTP version 'HTTP/2.0' is not supported; send HTTP/1.1 (or 1.0)");
}

TEST(HttpHead, HeaderLinesWithoutANameAre400) {
  HttpRefusal r = refused_head("GET / HTTP/1.1\r\nHost: a\r\nno colon here\r\n\r\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.message, "the header line 'no colon here' is not 'Name: value'");
  r = refused_head("GET / HTTP/1.1\r\nHost: a\r\n folded: b\r\n\r\n");
  EXPECT_EQ(r.message, "the header line ' folded: b' is not 'Name: value'");
  r = refused_head("GET / HTTP/1.1\r\n: empty name\r\n\r\n");
  EXPECT_EQ(r.message, "the header line ': empty name' is not 'Name: value'");
}

TEST(HttpHead, ContentLengthMistakes) {
  HttpRefusal r = refused_head("POST / HTTP/1.1\r\nContent-Length: -5\r\n\r\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.message,
            "Content-Length '-5' is not a non-negative integer; give the body's size in bytes");
  EXPECT_EQ(r.code, "");
  // 11 digits: a number, over the 4 MiB limit.
  r = refused_head("POST / HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n");
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(r.message,
            "the request body is 99999999999 bytes, over this server's limit of 4194304 "
            "(--max-body-bytes); send a smaller request");
  EXPECT_EQ(r.code, "request_too_large");
  // 30 digits: past 64 bits, still 413 (not an overflow); the message cuts it at 24.
  r = refused_head("POST / HTTP/1.1\r\nContent-Length: " + std::string(30, '9') + "\r\n\r\n");
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(r.message, "the request body is " + std::string(24, '9') +
                           " bytes, over this server's limit of 4194304 (--max-body-bytes); send "
                           "a smaller request");
  // Leading zeros are not digits of the size: 10 bytes within a limit of 10.
  std::string in = "POST / HTTP/1.1\r\nContent-Length: 0000000000000000000000010\r\n\r\n";
  RequestHead head;
  HttpRefusal refusal;
  ASSERT_EQ(parse_head(in, 10, head, refusal), Framing::whole);
  EXPECT_EQ(head.length, 10u);
  r = refused_head("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.message, "the request has several different Content-Length headers; send one");
  r = refused_head("POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.message, "the request has both Transfer-Encoding and Content-Length; send only one");
}

TEST(HttpHead, OtherCodingsAre501AndLongHeads431) {
  HttpRefusal r = refused_head(
      "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n");
  EXPECT_EQ(r.status, 501);
  EXPECT_EQ(r.message,
            "Transfer-Encoding 'gzip, chunked' is not supported; send the body with "
            "Content-Length or as 'chunked'");
  EXPECT_EQ(r.code, "unsupported_transfer_encoding");
  const std::string too_long =
      "the request head (request line and headers) is over 65536 bytes; send fewer or shorter "
      "headers";
  // Not whole yet: kMaxHead bytes wait for more, one more is refused.
  std::string in = "GET / HTTP/1.1\r\nX: " + std::string(kMaxHead - 19, 'a');
  ASSERT_EQ(in.size(), kMaxHead);
  RequestHead head;
  HttpRefusal refusal;
  EXPECT_EQ(parse_head(in, kLimit, head, refusal), Framing::more);
  r = refused_head(in + "a");
  EXPECT_EQ(r.status, 431);
  EXPECT_EQ(r.message, too_long);
  EXPECT_EQ(r.code, "headers_too_large");
  // Whole: kMaxHead + 3 bytes with the blank line that ends them pass, one more does not.
  EXPECT_EQ(refused_head(in + "\r\n\r\n").status, 431);
  in = "GET / HTTP/1.1\r\nX: " + std::string(kMaxHead - 20, 'a') + "\r\n\r\n";
  ASSERT_EQ(in.size(), kMaxHead + 3);
  EXPECT_EQ(parse_head(in, kLimit, head, refusal), Framing::whole);
  EXPECT_EQ(in, "");
}

// feed() over `parts` in turn (each appended to what is left); the last result.
Framing feed_parts(ChunkedBody& body, const std::vector<std::string>& parts, std::string& in,
                   size_t& reserved, HttpRefusal& refusal, size_t max_body_bytes = kLimit) {
  Framing f = Framing::more;
  for (const std::string& part : parts) {
    in += part;
    f = body.feed(
        in, max_body_bytes,
        [&](size_t n) {
          reserved += n;
          return true;
        },
        refusal);
    if (f != Framing::more) break;
  }
  return f;
}

TEST(HttpChunked, DecodesABodySplitAtEveryByte) {
  // "hello" + " world" in two chunks (the second with an extension), a trailer, then the start of
  // a pipelined request.
  const std::string full = "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nTrailer: x\r\n\r\nGET /";
  for (size_t cut = 0; cut <= full.size(); ++cut) {
    ChunkedBody body;
    std::string in;
    size_t reserved = 0;
    HttpRefusal refusal;
    Framing f = feed_parts(body, {full.substr(0, cut), full.substr(cut)}, in, reserved, refusal);
    ASSERT_EQ(f, Framing::whole) << "cut at " << cut;
    if (cut >= full.size() - 5) in += full.substr(cut);  // whole before the second part
    EXPECT_EQ(body.body(), "hello world") << "cut at " << cut;
    EXPECT_EQ(in, "GET /") << "cut at " << cut;
    EXPECT_EQ(reserved, 11u) << "cut at " << cut;  // each chunk as it is announced
  }
  // Byte by byte, LF-only lines.
  ChunkedBody body;
  std::string in;
  size_t reserved = 0;
  HttpRefusal refusal;
  const std::string lf = "3\nabc\n1\nd\n0\n\n";
  std::vector<std::string> bytes;
  for (char ch : lf) bytes.emplace_back(1, ch);
  ASSERT_EQ(feed_parts(body, bytes, in, reserved, refusal), Framing::whole);
  EXPECT_EQ(body.body(), "abcd");
  EXPECT_EQ(in, "");
  body.reset();
  EXPECT_EQ(body.body(), "");
}

TEST(HttpChunked, ASizeLineOverKMaxChunkLineIs400) {
  const std::string too_long = "a chunk size line of the request body is too long";
  // 1024 bytes without their LF wait; with one more they are refused, LF or not.
  ChunkedBody body;
  std::string in;
  size_t reserved = 0;
  HttpRefusal refusal;
  const std::string zeros(kMaxChunkLine - 1, '0');  // the last chunk, written long
  EXPECT_EQ(feed_parts(body, {zeros + "\r"}, in, reserved, refusal), Framing::more);
  EXPECT_EQ(in, zeros + "\r");  // kept whole until its LF
  EXPECT_EQ(feed_parts(body, {"\n\r\n"}, in, reserved, refusal), Framing::whole);
  for (const std::string& tail : {std::string("0"), std::string("0\r\n")}) {
    ChunkedBody b;
    std::string i;
    EXPECT_EQ(feed_parts(b, {zeros + "\r", tail}, i, reserved, refusal), Framing::refused);
    EXPECT_EQ(refusal.status, 400);
    EXPECT_EQ(refusal.message, too_long);
  }
}

TEST(HttpChunked, MalformedChunksAre400) {
  ChunkedBody body;
  std::string in;
  size_t reserved = 0;
  HttpRefusal refusal;
  EXPECT_EQ(feed_parts(body, {"zz\r\n"}, in, reserved, refusal), Framing::refused);
  EXPECT_EQ(refusal.status, 400);
  EXPECT_EQ(refusal.message,
            "'zz' is not a chunk size; a chunked body is hex sizes, each followed by that many "
            "bytes");
  EXPECT_EQ(in, "zz\r\n");  // untouched: the answer drops it
  ChunkedBody longer;
  in.clear();
  EXPECT_EQ(feed_parts(longer, {"3\r\nabcd\r\n"}, in, reserved, refusal), Framing::refused);
  EXPECT_EQ(refusal.status, 400);
  EXPECT_EQ(refusal.message, "a chunk of the request body is longer than its size says");
}

TEST(HttpChunked, PassingTheLimitIs413AsTheChunkIsAnnounced) {
  const std::string too_large =
      "the chunked request body passed this server's limit of 10 bytes (--max-body-bytes); send a "
      "smaller request";
  ChunkedBody body;
  std::string in;
  size_t reserved = 0;
  HttpRefusal refusal;
  // 6 + 5 = 11 bytes of 10: refused at the second size line, before its data.
  EXPECT_EQ(feed_parts(body, {"6\r\nabcdef\r\n5\r\n"}, in, reserved, refusal, 10),
            Framing::refused);
  EXPECT_EQ(refusal.status, 413);
  EXPECT_EQ(refusal.message, too_large);
  EXPECT_EQ(refusal.code, "request_too_large");
  EXPECT_EQ(reserved, 6u);
  // 16 hex digits: past what a size may be, refused without reading it as a number.
  ChunkedBody huge;
  in.clear();
  EXPECT_EQ(feed_parts(huge, {"1000000000000000\r\n"}, in, reserved, refusal, 10),
            Framing::refused);
  EXPECT_EQ(refusal.status, 413);
  EXPECT_EQ(refusal.message, too_large);
}

TEST(HttpChunked, NoRoomIs503AndLongTrailers431) {
  ChunkedBody body;
  std::string in = "4\r\nabcd\r\n";
  HttpRefusal refusal;
  EXPECT_EQ(body.feed(
                in, kLimit, [](size_t) { return false; }, refusal),
            Framing::refused);
  EXPECT_EQ(refusal.status, 503);
  EXPECT_EQ(refusal.message,
            "the server is receiving too many request bodies at once; retry in a moment");
  EXPECT_EQ(refusal.code, "server_busy");
  ChunkedBody trailers;
  size_t reserved = 0;
  in.clear();
  EXPECT_EQ(
      feed_parts(trailers, {"0\r\nX: " + std::string(kMaxTrailers, 'a')}, in, reserved, refusal),
      Framing::refused);
  EXPECT_EQ(refusal.status, 431);
  EXPECT_EQ(refusal.message, "the trailers of the chunked request body are too long");
}

TEST(HttpAnswer, WholeRequestAndRefusalBytes) {
  EXPECT_EQ(whole_request("POST /x HTTP/1.1\r\nHost: a\r\n", "hi"),
            "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi");
  EXPECT_EQ(refusal_response({400, "the request has no request line", ""}),
            "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: "
            "111\r\nConnection: close\r\n\r\n"
            "{\"error\":{\"code\":null,\"message\":\"the request has no request line\","
            "\"param\":null,\"type\":\"invalid_request_error\"}}");
  EXPECT_EQ(refusal_response(server_busy()),
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            "Content-Length: 154\r\nConnection: close\r\nRetry-After: 1\r\n\r\n"
            "{\"error\":{\"code\":\"server_busy\",\"message\":\"the server is receiving too "
            "many request bodies at once; retry in a moment\",\"param\":null,\"type\":"
            "\"server_error\"}}");
}

}  // namespace
}  // namespace hogwild::server
