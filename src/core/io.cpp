// Checked file input and output (io.h).
#include "core/io.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace hogwild {

namespace fs = std::filesystem;

void require_readable_file(const fs::path& path, std::string_view what, std::string_view hint) {
  std::error_code ec;
  const std::string sep = hint.empty() ? "" : "; ";
  if (!fs::exists(path, ec))
    fail("{} '{}' does not exist{}{}", what, path.string(), sep, hint);
  if (fs::is_directory(path, ec))
    fail("{} '{}' is a directory, not a file{}{}", what, path.string(), sep, hint);
}

std::string read_file(const fs::path& path, std::string_view what) {
  require_readable_file(path, what);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{} '{}' cannot be read: {}; check its permissions", what, path.string(),
                std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail("{} '{}' cannot be read; check the file", what, path.string());
  return ss.str();
}

OutputFile::OutputFile(const std::string& path, std::string_view flag) : path_(path), flag_(flag) {
  if (path.empty()) fail("{}: the file name is empty; give a path (or - for standard output)", flag);
  if (path == "-") {
    f_ = stdout;
    return;
  }
  std::error_code ec;
  if (fs::is_directory(path, ec))
    fail("{}: '{}' is a directory; give a file name inside it", flag, path);
  f_ = std::fopen(path.c_str(), "wb");
  if (!f_)
    fail("{}: cannot create '{}': {}; check that the directory exists and is writable", flag, path,
         std::strerror(errno));
}

OutputFile::~OutputFile() {
  if (f_ && f_ != stdout) std::fclose(f_);
}

void OutputFile::fail_write(int err) const {
  fail("{}: cannot write '{}': {}", flag_, path_ == "-" ? "standard output" : path_,
       std::strerror(err ? err : EIO));
}

void OutputFile::write(std::string_view bytes) {
  if (!f_) fail("{}: '{}' is already closed (internal order of writes)", flag_, path_);
  if (bytes.empty()) return;
  errno = 0;
  if (std::fwrite(bytes.data(), 1, bytes.size(), f_) != bytes.size()) fail_write(errno);
}

void OutputFile::flush() {
  if (!f_) return;
  errno = 0;
  if (std::fflush(f_) != 0 || std::ferror(f_)) fail_write(errno);
}

void OutputFile::close() {
  if (!f_) return;
  std::FILE* f = f_;
  if (f == stdout) {
    flush();
    f_ = nullptr;
    return;
  }
  f_ = nullptr;
  errno = 0;
  const bool bad = std::fflush(f) != 0 || std::ferror(f);
  const int err = errno;
  if (std::fclose(f) != 0 || bad) fail_write(bad ? err : errno);
}

namespace {
// The temporary name beside `path`, after the checks OutputFile would make on path itself.
std::string temporary_for(const std::string& path, std::string_view flag) {
  if (path == "-" || path.empty() || is_special_file(path)) return path;
  std::error_code ec;
  if (fs::is_directory(path, ec))
    fail("{}: '{}' is a directory; give a file name inside it", flag, path);
  return path + ".tmp";
}
}  // namespace

AtomicOutputFile::AtomicOutputFile(const std::string& path, std::string_view flag)
    : path_(path), tmp_(temporary_for(path, flag)), flag_(flag), out_(tmp_, flag) {}

AtomicOutputFile::~AtomicOutputFile() {
  if (committed_ || tmp_ == path_) return;
  try {
    out_.close();
  } catch (const Error&) {
  }
  std::error_code ec;
  fs::remove(tmp_, ec);
}

void AtomicOutputFile::commit() {
  out_.close();
  if (tmp_ != path_) {
    std::error_code ec;
    fs::rename(tmp_, path_, ec);
    if (ec)
      fail("{}: cannot rename '{}' to '{}': {}; the output is in '{}'", flag_, tmp_, path_,
           ec.message(), tmp_);
  }
  committed_ = true;
}

bool is_special_file(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  return !ec && fs::exists(st) && !fs::is_regular_file(st) && !fs::is_directory(st);
}

void check_stdout() {
  errno = 0;
  const bool flush_failed = std::fflush(stdout) != 0;
  const int err = errno;
  if (flush_failed && err != 0)
    fail("cannot write to standard output: {}", std::strerror(err));
  if (flush_failed || std::ferror(stdout))  // an earlier write failed; its errno is gone
    fail("cannot write to standard output: some output was lost (a full disk or a closed pipe)");
}

}  // namespace hogwild
