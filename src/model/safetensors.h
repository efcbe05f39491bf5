// safetensors reader and writer (format: github.com/huggingface/safetensors, README "Format").
//
// File layout: u64 little-endian N = header length; N bytes of UTF-8 JSON
// {"TENSOR": {"dtype": "BF16", "shape": [d0, d1], "data_offsets": [begin, end]}, ...,
//  "__metadata__": {"k": "v"}}; then the data section. Offsets are relative to the data section
// (byte 8 + N), end exclusive, tensors row-major little-endian.
//
// The reader memory-maps the file and trusts nothing in it: header length against file size, JSON
// validity, dtype, shape (non-negative, overflow-checked element and byte counts), data_offsets in
// range, begin <= end, end - begin == bytes, no two tensors overlapping. Every failure throws
// hogwild::Error naming the file (and the tensor) and saying what to do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/dtype.h"

namespace hogwild {

/// One tensor of a safetensors header.
struct TensorInfo {
  std::string name;  // HF tensor name, e.g. "model.layers.0.self_attn.q_proj.weight"
  Dtype dtype = Dtype::f32;
  std::vector<int64_t> shape;  // row-major dims; [] is a scalar (1 element)
  uint64_t begin = 0;          // byte offsets into the data section, end exclusive
  uint64_t end = 0;
  uint64_t numel() const;  // product of shape (checked at parse time not to overflow)
  uint64_t nbytes() const { return end - begin; }
};

/// A parsed and validated header.
struct SafetensorsHeader {
  uint64_t header_len = 0;          // N, the JSON byte count
  uint64_t data_offset = 0;         // 8 + N: file offset of the data section
  uint64_t data_size = 0;           // bytes of the data section (file size - data_offset)
  std::vector<TensorInfo> tensors;  // in file (data offset) order
  std::map<std::string, std::string> metadata;  // "__metadata__" (string values only)
};

/// Largest header hogwild accepts (the safetensors library's own limit is 100 MB).
inline constexpr uint64_t kMaxSafetensorsHeader = 100ull << 20;

/// Parses and validates a header from the first bytes of a file. `bytes` must hold at least the
/// 8-byte length and the JSON header; `file_size` is the size of the whole file (the data section
/// is checked against it). `label` names the file in error messages. Throws hogwild::Error.
/// (The libFuzzer target calls this with a buffer that is the whole "file".)
SafetensorsHeader parse_safetensors_header(const uint8_t* bytes, size_t n_bytes, uint64_t file_size,
                                           const std::string& label);

/// A memory-mapped safetensors file (read-only). Pages are read lazily: opening a file reads only
/// the header, so `hogwild info` on a 60 GB model is instant.
class SafetensorsFile {
 public:
  /// Opens and validates `path`. Throws hogwild::Error (missing, unreadable, corrupt).
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t file_size() const { return size_; }
  const SafetensorsHeader& header() const { return header_; }
  /// Tensor by name, or nullptr.
  const TensorInfo* find(const std::string& name) const;
  /// Asks the kernel to read the whole file ahead (madvise WILLNEED), before a full load.
  void prefetch() const;
  /// Pointer to the tensor's first byte (no alignment guarantee).
  const uint8_t* data(const TensorInfo& t) const { return base_ + header_.data_offset + t.begin; }

 private:
  std::string path_;
  uint64_t size_ = 0;
  const uint8_t* base_ = nullptr;
  SafetensorsHeader header_;
  std::map<std::string, size_t> index_;
};

/// A model checkpoint: DIR/model.safetensors, or DIR/model.safetensors.index.json ("weight_map":
/// tensor name -> shard file) and its shards. Checks that every shard exists, that each tensor the
/// index names is in its shard, that no tensor is in two files and that no shard holds tensors
/// the index does not list.
class Checkpoint {
 public:
  struct Entry {
    const SafetensorsFile* file;
    const TensorInfo* info;
  };
  /// Throws hogwild::Error when DIR has neither file, or any check fails.
  explicit Checkpoint(const std::string& model_dir);
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }
  const std::map<std::string, Entry>& tensors() const { return tensors_; }
  const Entry* find(const std::string& name) const;
  /// Sum of all tensors' bytes.
  uint64_t total_bytes() const;
  bool sharded() const { return sharded_; }

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, Entry> tensors_;
  bool sharded_ = false;
};

/// A tensor to write: name, dtype, shape. Its bytes come from the writer's callback.
struct TensorToWrite {
  std::string name;
  Dtype dtype = Dtype::f32;
  std::vector<int64_t> shape;
  uint64_t nbytes() const;
};

/// Writes a safetensors file: the header (tensors in the given order, contiguous, JSON padded with
/// spaces to a multiple of 8 bytes as the safetensors library does), then each tensor's bytes as
/// produced by `fill(i, out)`, which must resize `out` to tensors[i].nbytes(). Throws
/// hogwild::Error when the file cannot be written.
void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata,
                       const std::function<void(size_t, std::vector<uint8_t>&)>& fill);

}  // namespace hogwild
