// Streaming writer of a 2-D little-endian float32 .npy file (NumPy format version 1.0,
// numpy/lib/format.py): rows are appended as they come, the shape in the header is fixed up on
// close(). Read with numpy.load(path) -> array of shape (n_rows, n_cols), dtype '<f4'.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace hogwild {

/// What is wrong with `path` as a .npy file name, "" if nothing: "" and "-" are refused (the
/// header's shape is rewritten at close, so the file must be seekable: standard output is not).
std::string npy_path_problem(const std::string& path);
/// Throws hogwild::Error "flag: <npy_path_problem>" when there is one.
void check_npy_path(const std::string& path, const std::string& flag);

class NpyWriter {
 public:
  /// Creates/truncates path for rows of n_cols floats. Throws hogwild::Error if it cannot.
  NpyWriter(const std::string& path, int64_t n_cols);
  ~NpyWriter();  // closes (best effort) if close() was not called
  NpyWriter(const NpyWriter&) = delete;
  NpyWriter& operator=(const NpyWriter&) = delete;
  /// Appends n_rows rows (n_rows * n_cols floats). Throws hogwild::Error on a write error.
  void append(const float* data, int64_t n_rows);
  /// Writes the final shape into the header and closes. Throws hogwild::Error on failure.
  void close();
  int64_t rows() const { return rows_; }

 private:
  void write_header();
  std::string path_;
  std::FILE* f_ = nullptr;
  int64_t cols_ = 0, rows_ = 0;
};

}  // namespace hogwild
