// Files in and out with every failure reported (docs/ARCHITECTURE.md: never lose a result). Reading
// names the file and says what is wrong (missing, a directory, unreadable); writing checks every
// write, flush and close, so a full disk or /dev/full is an error with a message, not a silent
// empty file and exit status 0.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

namespace hogwild {

/// The whole file as bytes. `what` names it in messages (e.g. "formatting file", "config.json").
/// Throws hogwild::Error when path does not exist, is a directory, or cannot be read.
std::string read_file(const std::filesystem::path& path, std::string_view what);

/// Throws hogwild::Error unless path names a regular file that can be read: "{what} '{path}' does
/// not exist" / "is a directory, not a file" / "cannot be read", each with `hint` appended.
void require_readable_file(const std::filesystem::path& path, std::string_view what,
                           std::string_view hint = "");

/// A file written with every write checked. "-" is stdout (not closed, flushed). `flag` names the
/// output in messages (e.g. "--json"). Errors throw hogwild::Error: "{flag}: cannot write
/// '{path}': {strerror}".
class OutputFile {
 public:
  /// Opens (creates or truncates) path. Throws hogwild::Error when path is empty, a directory, or
  /// cannot be created (the message says to check the directory).
  OutputFile(const std::string& path, std::string_view flag);
  ~OutputFile();  // closes without reporting (call close() to see errors)
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(std::string_view bytes);
  /// Pushes buffered bytes to the operating system (a later kill -9 keeps them).
  void flush();
  /// Flushes and closes; throws on any error seen. Idempotent.
  void close();
  bool is_stdout() const { return f_ == stdout; }
  const std::string& path() const { return path_; }

 private:
  [[noreturn]] void fail_write(int err) const;
  std::string path_, flag_;
  std::FILE* f_ = nullptr;
};

/// A file that appears at `path` only when complete: bytes go to "{path}.tmp", commit() renames it
/// over path (an old file at path stays intact until then). "-" writes to stdout directly, and so
/// does an existing path that is not a regular file (/dev/stdout, a pipe, /dev/full).
/// Destroyed without commit(): the temporary file is removed.
class AtomicOutputFile {
 public:
  AtomicOutputFile(const std::string& path, std::string_view flag);
  ~AtomicOutputFile();
  void write(std::string_view bytes) { out_.write(bytes); }
  /// Closes the temporary file and renames it to path. Throws hogwild::Error on failure.
  void commit();

 private:
  std::string path_, tmp_, flag_;
  OutputFile out_;
  bool committed_ = false;
};

/// True when path exists and is not a regular file or a directory (a device, a pipe): such a path
/// is written directly, never through a temporary file beside it.
bool is_special_file(const std::string& path);

/// Flushes stdout and throws hogwild::Error when something written to it was lost (a full disk,
/// /dev/full, a closed pipe). Call before exiting with status 0.
void check_stdout();

}  // namespace hogwild
