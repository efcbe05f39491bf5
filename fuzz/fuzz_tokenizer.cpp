// libFuzzer target for the tokenizer.json loader (src/tokenizer). Input: the JSON bytes, optionally
// followed by a NUL byte and a text to encode. Whatever loads must encode, decode and stream any
// text without crashing; hostile files must fail with hogwild::Error, never crash or hang.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1 << 16)) return 0;  // keep runs fast; sizes are bounded by the loader anyway
  std::string_view all(reinterpret_cast<const char*>(data), size);
  size_t nul = all.find('\0');
  std::string_view json = all.substr(0, nul);
  std::string text = nul == std::string_view::npos
                         ? std::string("Hello w\xC3\xB6rld 123 <s> \xF0\x9F\x98\x80\xFF!\n\t ")
                         : std::string(all.substr(nul + 1));
  try {
    hogwild::Tokenizer tok = hogwild::Tokenizer::from_json(json, "fuzz");
    for (bool special : {false, true}) {
      std::vector<int32_t> ids = tok.encode(text, special);
      std::string out = tok.decode(ids, !special);
      hogwild::IncrementalDecoder stream(tok, special);
      for (int32_t id : ids) out += stream.push(id);
      out += stream.flush();
      for (int32_t id : ids) (void)tok.id_to_token(id);
    }
    (void)tok.vocab_size();
  } catch (const hogwild::Error&) {
    // expected for malformed files
  }
  return 0;
}
