// Streaming writer of a 2-D little-endian float32 .npy file (NumPy format version 1.0,
// numpy/lib/format.py): rows are appended as they come, the shape in the header is fixed up on
// close(). Read with numpy.load(path) -> array of shape (n_rows, n_cols), dtype '<f4'.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace hogwild {

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
