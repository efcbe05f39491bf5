#include "sampling/npy.h"

#include <bit>
#include <cstring>

#include "core/error.h"

namespace hogwild {
namespace {
// Header bytes including magic, version and length: fixed so the shape can be rewritten in place
// (room for two 20-digit numbers). A multiple of 64 as NumPy writes.
constexpr size_t kHeaderBytes = 128;
}  // namespace

std::string npy_path_problem(const std::string& path) {
  if (path.empty()) return "the file name is empty; give a path for the .npy file";
  if (path == "-") return "a .npy file needs a seekable file; give a path instead of -";
  return "";
}

void check_npy_path(const std::string& path, const std::string& flag) {
  if (const std::string p = npy_path_problem(path); !p.empty()) fail("{}: {}", flag, p);
}

NpyWriter::NpyWriter(const std::string& path, int64_t n_cols) : path_(path), cols_(n_cols) {
  static_assert(std::endian::native == std::endian::little,
                "the .npy writer assumes little endian");
  f_ = std::fopen(path.c_str(), "wb");
  if (!f_) fail("cannot create {}: {}; check the path and permissions", path, std::strerror(errno));
  write_header();
}

NpyWriter::~NpyWriter() {
  if (f_) {
    try {
      close();
    } catch (...) {
    }
  }
}

void NpyWriter::write_header() {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows_) +
                     ", " + std::to_string(cols_) + "), }";
  const size_t pre = 10;  // magic(6) + version(2) + header_len(2)
  dict.append(kHeaderBytes - pre - dict.size() - 1, ' ');
  dict.push_back('\n');
  const uint16_t hl = static_cast<uint16_t>(dict.size());
  unsigned char head[pre] = {0x93,
                             'N',
                             'U',
                             'M',
                             'P',
                             'Y',
                             1,
                             0,
                             static_cast<unsigned char>(hl & 0xff),
                             static_cast<unsigned char>(hl >> 8)};
  if (std::fseek(f_, 0, SEEK_SET) != 0 || std::fwrite(head, 1, pre, f_) != pre ||
      std::fwrite(dict.data(), 1, dict.size(), f_) != dict.size())
    fail("cannot write {}: {}", path_, std::strerror(errno));
}

void NpyWriter::append(const float* data, int64_t n_rows) {
  const size_t n = static_cast<size_t>(n_rows * cols_);
  if (std::fseek(f_, 0, SEEK_END) != 0 || std::fwrite(data, sizeof(float), n, f_) != n)
    fail("cannot write {}: {} (disk full?)", path_, std::strerror(errno));
  rows_ += n_rows;
}

void NpyWriter::close() {
  if (!f_) return;
  write_header();
  const bool ok = std::fclose(f_) == 0;
  f_ = nullptr;
  if (!ok) fail("cannot finish {}: {}", path_, std::strerror(errno));
}

}  // namespace hogwild
