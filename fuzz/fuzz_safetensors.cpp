// libFuzzer target: the safetensors header parser on arbitrary bytes (the buffer is the whole
// "file"). Any input must either parse or throw hogwild::Error; for a parsed header every tensor's
// bytes are read, so ASan catches an offset check that lets a tensor point outside the buffer.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    hogwild::SafetensorsHeader h = hogwild::parse_safetensors_header(data, size, size, "fuzz");
    std::vector<float> out;
    for (const hogwild::TensorInfo& t : h.tensors) {
      const uint64_t n = t.numel();
      if (n > (1u << 20)) continue;  // bounded by the buffer anyway; keep each run fast
      out.resize(n);
      hogwild::convert_to_f32(data + h.data_offset + t.begin, t.dtype, n, out.data());
    }
  } catch (const hogwild::Error&) {
  }
  return 0;
}
