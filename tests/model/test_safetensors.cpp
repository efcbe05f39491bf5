// safetensors reader/writer: a hand-built file read back byte for byte, a round trip of every
// dtype, and every corrupt or hostile header rejected with a message naming the file, tensor and
// problem.
#include <cstring>

#include "model/safetensors.h"
#include "tests/model/test_util.h"

namespace hogwild {
namespace {

using test::expect_error;
using test::TempDir;

// u64 LE length + header + data.
std::string file_bytes(const std::string& header, const std::string& data = "",
                       uint64_t len = ~0ull) {
  if (len == ~0ull) len = header.size();
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[size_t(i)] = char((len >> (8 * i)) & 0xff);
  return s + header + data;
}

SafetensorsHeader parse_bytes(const std::string& b) {
  return parse_safetensors_header(reinterpret_cast<const uint8_t*>(b.data()), b.size(), b.size(),
                                  "x.safetensors");
}

std::string f32s(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), std::data(v), s.size());
  return s;
}

TEST(Safetensors, HandBuiltFileReadsBack) {
  TempDir d;
  // Two F32 tensors and one BF16 (1.0 = 0x3F80, -2.0 = 0xC000), in reverse file order in the JSON.
  std::string header =
      R"({"b":{"dtype":"BF16","shape":[2],"data_offsets":[16,20]},)"
      R"("a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"__metadata__":{"format":"pt"}})";
  std::string data = f32s({1.5f, -2.0f, 3.0f, 0.25f}) + std::string("\x80\x3f\x00\xc0", 4);
  test::write_file(d / "m.safetensors", file_bytes(header, data));
  SafetensorsFile f(d / "m.safetensors");
  const SafetensorsHeader& h = f.header();
  EXPECT_EQ(h.header_len, header.size());
  EXPECT_EQ(h.data_offset, 8 + header.size());
  EXPECT_EQ(h.data_size, 20u);
  EXPECT_EQ(h.metadata.at("format"), "pt");
  ASSERT_EQ(h.tensors.size(), 2u);
  EXPECT_EQ(h.tensors[0].name, "a");  // sorted by offset
  const TensorInfo* a = f.find("a");
  const TensorInfo* b = f.find("b");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(f.find("c"), nullptr);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(a->numel(), 4u);
  EXPECT_EQ(a->dtype, Dtype::f32);
  float av[4];
  convert_to_f32(f.data(*a), a->dtype, 4, av);
  EXPECT_EQ(av[0], 1.5f);
  EXPECT_EQ(av[1], -2.0f);
  EXPECT_EQ(av[3], 0.25f);
  float bv[2];
  convert_to_f32(f.data(*b), b->dtype, 2, bv);
  EXPECT_EQ(bv[0], 1.0f);
  EXPECT_EQ(bv[1], -2.0f);
}

TEST(Safetensors, WriterRoundTripsEveryDtypeScalarsAndEmptyTensors) {
  TempDir d;
  std::vector<TensorToWrite> t = {{"w.f32", Dtype::f32, {3}},
                                  {"w.bf16", Dtype::bf16, {2, 2}},
                                  {"w.f16", Dtype::f16, {2}},
                                  {"scalar", Dtype::f32, {}},
                                  {"empty", Dtype::bf16, {0, 5}}};
  const std::vector<std::vector<float>> vals = {
      {1.0f, -0.5f, 1e-3f}, {1.0f, 2.0f, -3.0f, 0.5f}, {65504.0f, -6.103515625e-05f}, {42.0f}, {}};
  write_safetensors(d / "m.safetensors", t, {{"format", "pt"}},
                    [&](size_t i, std::vector<uint8_t>& out) {
                      out.resize(t[i].nbytes());
                      convert_from_f32(vals[i].data(), vals[i].size(), t[i].dtype, out.data());
                    });
  std::string raw = test::read_file(d / "m.safetensors");
  uint64_t n;
  std::memcpy(&n, raw.data(), 8);
  EXPECT_EQ(n % 8, 0u);  // padded like the safetensors library
  EXPECT_EQ(raw.size(), 8 + n + 12 + 8 + 4 + 4 + 0);
  SafetensorsFile f(d / "m.safetensors");
  EXPECT_EQ(f.header().metadata.at("format"), "pt");
  for (size_t i = 0; i < t.size(); ++i) {
    const TensorInfo* ti = f.find(t[i].name);
    ASSERT_TRUE(ti) << t[i].name;
    EXPECT_EQ(ti->dtype, t[i].dtype);
    EXPECT_EQ(ti->shape, t[i].shape);
    std::vector<float> back(ti->numel());
    convert_to_f32(f.data(*ti), ti->dtype, back.size(), back.data());
    EXPECT_EQ(back, vals[i]) << t[i].name;  // all values are exact in their dtype
  }
}

TEST(Safetensors, Conversions) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(1.00390625f), 0x3f80);  // halfway 1 + 2^-8: ties to even (down)
  EXPECT_EQ(f32_to_bf16(1.01171875f), 0x3f82);  // halfway 1 + 3*2^-8: ties to even (up)
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x0001), 5.9604644775390625e-08f);  // smallest subnormal 2^-24
  EXPECT_EQ(f16_to_f32(0x8400), -6.103515625e-05f);        // -2^-14
  EXPECT_EQ(f32_to_f16(5.9604644775390625e-08f), 0x0001);
  EXPECT_EQ(f32_to_f16(2.98023223876953125e-08f), 0x0000);  // 2^-25: tie to even (0)
  EXPECT_EQ(f32_to_f16(1e6f), 0x7c00);                      // overflow -> inf
  EXPECT_EQ(f32_to_f16(0.1f), 0x2e66);
  for (uint32_t h = 0; h < 0x10000; ++h) {  // every finite f16 survives f16 -> f32 -> f16
    if ((h & 0x7c00) == 0x7c00) continue;
    ASSERT_EQ(f32_to_f16(f16_to_f32(uint16_t(h))), h) << h;
  }
}

struct BadCase {
  const char* what;
  std::string bytes;
  std::vector<std::string> message;
};

TEST(Safetensors, CorruptAndHostileHeadersAreRejected) {
  const std::string ok_entry = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string data8(8, '\0');
  std::vector<BadCase> cases = {
      {"too short", "abc", {"x.safetensors", "3 bytes, too short"}},
      {"huge header length", file_bytes("{}", "", ~0ull - 1), {"larger than the 100 MiB limit"}},
      {"header past EOF",
       file_bytes("{}", "", 1000),
       {"header length 1000 bytes runs past the end"}},
      {"bad JSON", file_bytes(R"({"a": {"dtype": )"), {"header is not valid JSON"}},
      {"not an object", file_bytes("[1, 2]"), {"header JSON is not an object"}},
      {"entry not an object", file_bytes(R"({"a": 3})"), {"tensor 'a'", "not a JSON object"}},
      {"unsupported dtype",
       file_bytes(R"({"a":{"dtype":"I8","shape":[8],"data_offsets":[0,8]}})", data8),
       {"tensor 'a' has dtype I8", "BF16, F16 and F32"}},
      {"missing dtype",
       file_bytes(R"({"a":{"shape":[2],"data_offsets":[0,8]}})", data8),
       {"missing \"dtype\""}},
      {"negative dim",
       file_bytes(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data8),
       {"shape entries must be non-negative integers"}},
      {"float dim",
       file_bytes(R"({"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", data8),
       {"shape entries must be non-negative integers"}},
      {"numel overflow",
       file_bytes(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,2],"data_offsets":[0,8]}})",
                  data8),
       {"tensor 'a': element count overflows"}},
      {"bytes overflow",
       file_bytes(R"({"a":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,8]}})",
                  data8),
       {"tensor 'a': byte count overflows"}},
      {"offsets not a pair",
       file_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", data8),
       {"\"data_offsets\" must be [begin, end]"}},
      {"begin > end",
       file_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", data8),
       {"begin 8 > end 0"}},
      {"size mismatch",
       file_bytes(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data8),
       {"tensor 'a': data_offsets span 8 bytes but dtype F32 and shape need 12"}},
      {"out of range",
       file_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", data8),
       {"tensor 'a': data_offsets [4, 12] run past the 8-byte data section"}},
      {"overlap",
       file_bytes("{" + ok_entry + R"(,"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                  std::string(12, '\0')),
       {"tensors 'a' [0, 8] and 'b' [4, 12] overlap"}},
      {"metadata not strings",
       file_bytes("{" + ok_entry + R"(,"__metadata__":{"n":1}})", data8),
       {"\"__metadata__\" value of 'n' is not a string"}},
      {"unknown key",
       file_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", data8),
       {"unknown header key 'x'"}},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.what);
    try {
      parse_bytes(c.bytes);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("x.safetensors"), std::string::npos) << msg;
      for (const std::string& m : c.message) EXPECT_NE(msg.find(m), std::string::npos) << msg;
    }
  }
  // Valid: duplicates of an empty tensor's offset, metadata, and nothing else.
  SafetensorsHeader h = parse_bytes(
      file_bytes("{" + ok_entry +
                     R"(,"e":{"dtype":"F16","shape":[0],"data_offsets":[8,8]},"__metadata__":{}})",
                 data8));
  EXPECT_EQ(h.tensors.size(), 2u);
}

TEST(Safetensors, TruncatedMissingAndNonRegularFiles) {
  TempDir d;
  write_safetensors(d / "m.safetensors", {{"w", Dtype::f32, {64}}}, {},
                    [](size_t, std::vector<uint8_t>& out) { out.assign(256, 0); });
  std::string raw = test::read_file(d / "m.safetensors");
  test::write_file(d / "t.safetensors", raw.substr(0, raw.size() - 10));  // a cut-off download
  expect_error([&] { SafetensorsFile f(d / "t.safetensors"); },
               {"t.safetensors", "tensor 'w'", "run past the 246-byte data section", "truncated"});
  test::write_file(d / "h.safetensors", raw.substr(0, 20));  // cut inside the header
  expect_error([&] { SafetensorsFile f(d / "h.safetensors"); },
               {"h.safetensors", "runs past the end of the 20-byte file"});
  test::write_file(d / "e.safetensors", "");
  expect_error([&] { SafetensorsFile f(d / "e.safetensors"); }, {"e.safetensors", "0 bytes"});
  expect_error([&] { SafetensorsFile f(d / "nope.safetensors"); },
               {"cannot open", "nope.safetensors", "No such file"});
  expect_error([&] { SafetensorsFile f(d.str()); }, {"is not a regular file"});
  expect_error([&] { Checkpoint c(d / "nodir"); }, {"nodir", "does not exist"});
}

}  // namespace
}  // namespace hogwild
