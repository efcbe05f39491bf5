#include "model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "core/io.h"
#include "model/config.h"

namespace hogwild {

namespace {

using nlohmann::json;

const char* kCorruptHint =
    "the file is corrupt or not a safetensors file; download or convert it again";

// a * b, false on uint64 overflow.
bool mul_overflow(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}

// A non-negative JSON integer (number_unsigned, or number_integer >= 0).
bool json_u64(const json& v, uint64_t* out) {
  if (v.is_number_unsigned()) {
    *out = v.get<uint64_t>();
    return true;
  }
  if (v.is_number_integer() && v.get<int64_t>() >= 0) {
    *out = uint64_t(v.get<int64_t>());
    return true;
  }
  return false;
}

TensorInfo parse_tensor_entry(const std::string& name, const json& e, const std::string& label) {
  if (!e.is_object())
    fail("{}: tensor '{}': header entry is not a JSON object; {}", label, name, kCorruptHint);
  TensorInfo t;
  t.name = name;
  auto dt = e.find("dtype");
  if (dt == e.end() || !dt->is_string())
    fail("{}: tensor '{}': missing \"dtype\" string; {}", label, name, kCorruptHint);
  const std::string& dts = dt->get_ref<const std::string&>();
  if (!dtype_from_name(dts, &t.dtype))
    fail(
        "{}: tensor '{}' has dtype {}; hogwild reads BF16, F16 and F32 tensors, and I32/F8_E4M3 "
        "in AWQ/GPTQ int4 and FP8 checkpoints (other quantizations are not supported): use the "
        "model's bf16 release",
        label, name, dts.substr(0, 32));
  auto sh = e.find("shape");
  if (sh == e.end() || !sh->is_array())
    fail("{}: tensor '{}': missing \"shape\" array; {}", label, name, kCorruptHint);
  uint64_t numel = 1;
  for (const json& d : *sh) {
    uint64_t v;
    if (!json_u64(d, &v) || v > uint64_t(INT64_MAX))
      fail("{}: tensor '{}': shape entries must be non-negative integers; {}", label, name,
           kCorruptHint);
    if (mul_overflow(numel, v, &numel))
      fail("{}: tensor '{}': element count overflows 64 bits; {}", label, name, kCorruptHint);
    t.shape.push_back(int64_t(v));
  }
  uint64_t nbytes;
  if (mul_overflow(numel, dtype_size(t.dtype), &nbytes))
    fail("{}: tensor '{}': byte count overflows 64 bits; {}", label, name, kCorruptHint);
  auto off = e.find("data_offsets");
  if (off == e.end() || !off->is_array() || off->size() != 2 || !json_u64((*off)[0], &t.begin) ||
      !json_u64((*off)[1], &t.end))
    fail("{}: tensor '{}': \"data_offsets\" must be [begin, end] of non-negative integers; {}",
         label, name, kCorruptHint);
  if (t.begin > t.end)
    fail("{}: tensor '{}': data_offsets begin {} > end {}; {}", label, name, t.begin, t.end,
         kCorruptHint);
  if (t.end - t.begin != nbytes)
    fail("{}: tensor '{}': data_offsets span {} bytes but dtype {} and shape need {}; {}", label,
         name, t.end - t.begin, dts, nbytes, kCorruptHint);
  for (const auto& [k, v] : e.items())
    if (k != "dtype" && k != "shape" && k != "data_offsets")
      fail("{}: tensor '{}': unknown header key '{}'; {}", label, name, k.substr(0, 64),
           kCorruptHint);
  return t;
}

}  // namespace

uint64_t TensorInfo::numel() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= uint64_t(d);
  return n;
}

SafetensorsHeader parse_safetensors_header(const uint8_t* bytes, size_t n_bytes, uint64_t file_size,
                                           const std::string& label) {
  SafetensorsHeader h;
  if (file_size < 8 || n_bytes < 8)
    fail("{}: file is {} bytes, too short for a safetensors header (8-byte length + JSON); {}",
         label, file_size, kCorruptHint);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];  // little-endian u64
  if (n > kMaxSafetensorsHeader)
    fail("{}: header length {} bytes is larger than the {} MiB limit; {}", label, n,
         kMaxSafetensorsHeader >> 20, kCorruptHint);
  if (n > file_size - 8)
    fail(
        "{}: header length {} bytes runs past the end of the {}-byte file (truncated download?); "
        "{}",
        label, n, file_size, kCorruptHint);
  if (n > n_bytes - 8)
    fail("{}: header length {} bytes runs past the {} bytes available; {}", label, n, n_bytes,
         kCorruptHint);
  h.header_len = n;
  h.data_offset = 8 + n;
  h.data_size = file_size - h.data_offset;

  json j;
  try {
    j = json::parse(bytes + 8, bytes + 8 + n);
  } catch (const json::exception& e) {
    fail("{}: header is not valid JSON ({}); {}", label, e.what(), kCorruptHint);
  }
  if (!j.is_object()) fail("{}: header JSON is not an object; {}", label, kCorruptHint);

  for (const auto& [key, value] : j.items()) {
    if (key == "__metadata__") {
      if (!value.is_object())
        fail("{}: \"__metadata__\" must be an object of strings; {}", label, kCorruptHint);
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string())
          fail("{}: \"__metadata__\" value of '{}' is not a string; {}", label, mk.substr(0, 64),
               kCorruptHint);
        h.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    TensorInfo t = parse_tensor_entry(key, value, label);
    if (t.end > h.data_size)
      fail(
          "{}: tensor '{}': data_offsets [{}, {}] run past the {}-byte data section (truncated "
          "file?); {}",
          label, key, t.begin, t.end, h.data_size, kCorruptHint);
    h.tensors.push_back(std::move(t));
  }
  std::sort(h.tensors.begin(), h.tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  // Sorted by begin: each non-empty tensor must start at or after the previous non-empty one's end.
  const TensorInfo* prev = nullptr;
  for (const TensorInfo& t : h.tensors) {
    if (t.nbytes() == 0) continue;
    if (prev && t.begin < prev->end)
      fail("{}: tensors '{}' [{}, {}] and '{}' [{}, {}] overlap in the data section; {}", label,
           prev->name, prev->begin, prev->end, t.name, t.begin, t.end, kCorruptHint);
    prev = &t;
  }
  return h;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    fail("cannot open {}: {}; check the path and the file's permissions", path,
         std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("{} is not a regular file; point to a safetensors file", path);
  }
  size_ = uint64_t(st.st_size);
  if (size_ < 8) {
    ::close(fd);
    fail("{}: file is {} bytes, too short for a safetensors header (8-byte length + JSON); {}",
         path, size_, kCorruptHint);
  }
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) fail("cannot memory-map {}: {}", path, std::strerror(errno));
  base_ = static_cast<const uint8_t*>(p);
  try {
    header_ = parse_safetensors_header(base_, size_, size_, path);
  } catch (...) {
    ::munmap(const_cast<uint8_t*>(base_), size_);
    base_ = nullptr;
    throw;
  }
  for (size_t i = 0; i < header_.tensors.size(); ++i) index_[header_.tensors[i].name] = i;
}

SafetensorsFile::~SafetensorsFile() {
  if (base_) ::munmap(const_cast<uint8_t*>(base_), size_);
}

void SafetensorsFile::prefetch() const {
  if (base_) ::madvise(const_cast<uint8_t*>(base_), size_, MADV_WILLNEED);
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &header_.tensors[it->second];
}

Checkpoint::Checkpoint(const std::string& model_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  require_model_dir(model_dir);
  fs::path dir(model_dir);
  fs::path single = dir / "model.safetensors";
  fs::path index = dir / "model.safetensors.index.json";
  auto add_file = [&](const fs::path& p) {
    files_.push_back(std::make_unique<SafetensorsFile>(p.string()));
    return files_.back().get();
  };
  if (fs::exists(single, ec)) {
    const SafetensorsFile* f = add_file(single);
    for (const TensorInfo& t : f->header().tensors) tensors_[t.name] = Entry{f, &t};
    return;
  }
  if (!fs::exists(index, ec))
    fail(
        "{} has no model.safetensors or model.safetensors.index.json; download the model's "
        "safetensors weights (PyTorch .bin and GGUF files are not read)",
        model_dir);
  sharded_ = true;
  const std::string index_text = read_file(index, "model.safetensors.index.json");
  json j;
  try {
    j = json::parse(index_text);
  } catch (const json::exception& e) {
    fail("{} is not valid JSON ({}); download it again", index.string(), e.what());
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    fail("{} has no \"weight_map\" object; download it again", index.string());
  std::map<std::string, std::vector<std::string>> by_file;  // shard -> tensor names
  for (const auto& [name, file] : j["weight_map"].items()) {
    if (!file.is_string()) fail("{}: weight_map['{}'] is not a file name", index.string(), name);
    std::string f = file.get<std::string>();
    if (f.empty() || f.find('/') != std::string::npos || f == "..")
      fail("{}: weight_map['{}'] = '{}' is not a plain file name in the model directory",
           index.string(), name, f);
    by_file[f].push_back(name);
  }
  if (by_file.empty()) fail("{}: weight_map is empty; download it again", index.string());
  // Every shard the index lists must exist before any is read, so that an error about one shard
  // never names another that is not there.
  for (const auto& [fname, names] : by_file)
    if (!fs::exists(dir / fname, ec))
      fail("shard {} listed in {} is missing; download all {} shards", (dir / fname).string(),
           index.string(), by_file.size());
  for (const auto& [fname, names] : by_file) {
    fs::path p = dir / fname;
    const SafetensorsFile* f = add_file(p);
    std::set<std::string> listed(names.begin(), names.end());
    for (const std::string& n : names)
      if (!f->find(n))
        fail(
            "{}: tensor '{}' is listed in model.safetensors.index.json but not in the shard; "
            "the shard or the index is out of date, download both again",
            p.string(), n);
    for (const TensorInfo& t : f->header().tensors) {
      if (!listed.count(t.name)) {
        auto other = j["weight_map"].find(t.name);
        if (other != j["weight_map"].end())
          fail(
              "{}: holds tensor '{}', which model.safetensors.index.json maps to {}; the shards "
              "and the index come from different downloads: download them again",
              p.string(), t.name, other->get<std::string>());
        fail(
            "{}: tensor '{}' is not listed in model.safetensors.index.json; the index is out of "
            "date, download it again",
            p.string(), t.name);
      }
      tensors_[t.name] = Entry{f, &t};
    }
  }
}

const Checkpoint::Entry* Checkpoint::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

uint64_t Checkpoint::total_bytes() const {
  uint64_t n = 0;
  for (const auto& [name, e] : tensors_) n += e.info->nbytes();
  return n;
}

uint64_t TensorToWrite::nbytes() const {
  uint64_t n = dtype_size(dtype);
  for (int64_t d : shape) n *= uint64_t(d);
  return n;
}

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata,
                       const std::function<void(size_t, std::vector<uint8_t>&)>& fill) {
  json h = json::object();
  if (!metadata.empty()) h["__metadata__"] = metadata;
  uint64_t off = 0;
  for (const TensorToWrite& t : tensors) {
    uint64_t nb = t.nbytes();
    h[t.name] = {
        {"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {off, off + nb}}};
    off += nb;
  }
  std::string s = h.dump();
  while (s.size() % 8 != 0) s.push_back(' ');
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) fail("cannot create {}: {}; check the output directory", path, std::strerror(errno));
  auto write = [&](const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f) != n) {
      std::fclose(f);
      fail("cannot write {}: {} (disk full?)", path, std::strerror(errno));
    }
  };
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = uint8_t(uint64_t(s.size()) >> (8 * i));
  write(len, 8);
  write(s.data(), s.size());
  std::vector<uint8_t> buf;
  for (size_t i = 0; i < tensors.size(); ++i) {
    buf.clear();
    fill(i, buf);
    HOGWILD_CHECK(buf.size() == tensors[i].nbytes());
    write(buf.data(), buf.size());
  }
  if (std::fclose(f) != 0) fail("cannot write {}: {} (disk full?)", path, std::strerror(errno));
}

}  // namespace hogwild
