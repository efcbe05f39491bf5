// `hogwild generate`: plain single-sequence generation (--device: CUDA when a GPU is usable, else
// the CPU backend; backend_flags.h).
//
//   hogwild generate -m DIR (-p TEXT | --ids 1,2,3) [--temperature T] [--top-k K] [--top-p P]
//       [--min-p P] [--repetition-penalty R] [--greedy] [--seed N] [-n N] [--json]
//       [--dump-logits FILE] [--stop STR]...
//
// Sampling defaults come from DIR/generation_config.json (transformers' defaults when absent);
// giving --temperature/--top-k/--top-p/--min-p turns sampling on, --greedy or --temperature 0
// turns it off. -p needs DIR/tokenizer.json and encodes the text as `tokenizer(text)` does
// (special tokens such as a Llama BOS added); --ids feeds ids as they are.
//
// --dump-logits FILE writes a NumPy .npy file, float32, shape (n_prompt + n_generated, vocab_size):
// row i holds the logits at position i of prompt ++ generated (predicting token i + 1), in the
// order transformers' `model(input_ids).logits[0]` returns them for that sequence.
#include "apps/hogwild/commands.h"
#include "apps/hogwild/backend_flags.h"
#include "apps/hogwild/sampling_flags.h"
#include "core/error.h"
#include "model/weights.h"
#include "sampling/generate.h"
#include "sampling/generation_config.h"
#include "sampling/npy.h"
#include "tokenizer/tokenizer.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hogwild::cli {
namespace {

struct GenerateArgs {
  std::string model_dir, prompt, ids, dump_logits;
  SamplingFlags sampling;
  DeviceFlags device;
  std::optional<int64_t> max_new_tokens;
  std::vector<std::string> stops;
  bool json = false;
};

std::vector<int32_t> parse_ids(const std::string& s) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i <= s.size()) {
    const size_t j = std::min(s.find(',', i), s.size());
    const std::string part = s.substr(i, j - i);
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (part.empty() || used != part.size() || v < 0 || v > INT32_MAX)
      fail("--ids: '{}' is not a token id; give comma-separated non-negative integers like 1,2,3",
           part);
    ids.push_back(static_cast<int32_t>(v));
    i = j + 1;
  }
  return ids;
}

std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint_generate(int) { g_interrupted.store(true); }

void run_generate(const GenerateArgs& a) {
  namespace fs = std::filesystem;
  if (a.prompt.empty() && a.ids.empty())
    fail("no prompt: give -p TEXT (not empty) or --ids 1,2,3");
  if (!a.prompt.empty() && !a.ids.empty()) fail("give one of -p TEXT or --ids 1,2,3, not both");
  if (a.max_new_tokens && *a.max_new_tokens < 0) fail("-n must be >= 0, got {}", *a.max_new_tokens);
  std::error_code ec;
  if (!fs::is_directory(a.model_dir, ec))
    fail("model directory '{}' does not exist; pass an HF model directory with -m", a.model_dir);
  std::unique_ptr<Tokenizer> tok;
  if (fs::exists(fs::path(a.model_dir) / "tokenizer.json", ec))
    tok = std::make_unique<Tokenizer>(Tokenizer::from_dir(a.model_dir));
  if (!a.prompt.empty() && !tok)
    fail("-p needs {}/tokenizer.json, which is missing; pass token ids with --ids instead",
         a.model_dir);
  if (!a.stops.empty() && !tok)
    fail("--stop needs {}/tokenizer.json to decode the output, which is missing", a.model_dir);

  const GenerationConfig gen = load_generation_config(a.model_dir);
  Sampler sampler(sampling_params(a.sampling, gen));
  // The flag given decides: --ids is used as is even when the model has a tokenizer.
  const std::vector<int32_t> prompt =
      !a.prompt.empty() ? tok->encode(a.prompt, true) : parse_ids(a.ids);
  const ModelConfig config = load_model_config(a.model_dir);
  for (int32_t id : prompt)  // checked before the weights load (a big model takes a while)
    if (id >= config.vocab_size)
      fail("prompt token id {} is outside the model's vocabulary [0, {})", id, config.vocab_size);
  const std::string dev = resolve_device(a.device, config);
  std::unique_ptr<Backend> backend_ptr =
      make_backend(a.model_dir, dev, a.device, static_cast<int64_t>(prompt.size()));
  Backend& backend = *backend_ptr;
  const ModelConfig& cfg = backend.config();

  GenerateOptions o;
  o.max_new_tokens = a.max_new_tokens.value_or(gen.max_new_tokens.value_or(128));
  if (o.max_new_tokens < 0) fail("-n must be >= 0, got {}", o.max_new_tokens);
  o.interrupt = &g_interrupted;
  o.eos_token_ids = gen.eos_token_id.empty() ? cfg.eos_token_id : gen.eos_token_id;
  require_kv_tokens(backend, static_cast<int64_t>(prompt.size()) + o.max_new_tokens,
                    "lower -n or raise --kv-tokens");
  o.stop_strings = a.stops;

  // Streaming: text through the incremental detokenizer, held back while it could be the start
  // of a stop string; ids when there is no tokenizer. Nothing is streamed with --json.
  std::unique_ptr<IncrementalDecoder> dec;
  StopStrings shown(a.stops);
  size_t printed = 0;
  if (tok) {
    dec = std::make_unique<IncrementalDecoder>(*tok);
    o.decode_piece = [&](int32_t id) {
      std::string piece = dec->push(id);
      shown.push(piece);
      if (!a.json) {
        const size_t n = shown.safe_length();
        if (n > printed) std::fwrite(shown.text().data() + printed, 1, n - printed, stdout);
        printed = std::max(printed, n);
        std::fflush(stdout);
      }
      return piece;
    };
  } else if (!a.json) {
    o.on_token = [](int32_t id) {
      std::printf("%d ", id);
      std::fflush(stdout);
    };
  }
  std::unique_ptr<NpyWriter> npy;
  if (!a.dump_logits.empty()) {
    npy = std::make_unique<NpyWriter>(a.dump_logits, cfg.vocab_size);
    o.on_logits = [&](const float* l, int64_t n) { npy->append(l, n); };
  }

  // Ctrl-C: stop after the current token, print what was generated, exit 130 (as `run`).
  g_interrupted = false;
  auto old_handler = std::signal(SIGINT, on_sigint_generate);
  GenerateResult r;
  try {
    r = generate(backend, prompt, sampler, o);
  } catch (...) {
    std::signal(SIGINT, old_handler);
    throw;
  }
  std::signal(SIGINT, old_handler);
  std::string text;
  if (tok) {
    if (!shown.stopped()) shown.push(dec->flush());
    text = shown.text();
  }
  if (npy) npy->close();
  if (a.json) {
    nlohmann::json j = {{"prompt_ids", prompt}, {"generated_ids", r.generated},
                        {"stop_reason", r.stop_reason}};
    if (tok) j["text"] = text;
    std::printf("%s\n", j.dump().c_str());
  } else {
    if (tok && text.size() > printed) std::fwrite(text.data() + printed, 1, text.size() - printed, stdout);
    std::printf("\n");
  }
  const double dec_tps = r.decode_seconds > 0 ? r.decode_forwards / r.decode_seconds : 0;
  std::fprintf(stderr,
               "prompt %lld tokens in %.3f s (%.1f tok/s); generated %zu tokens, decode %.1f "
               "tok/s; stop: %s%s\n",
               static_cast<long long>(r.prompt_tokens), r.prefill_seconds,
               r.prompt_tokens / std::max(r.prefill_seconds, 1e-9), r.generated.size(), dec_tps,
               r.stop_reason.c_str(),
               npy ? fmt::format("; logits ({} x {}) -> {}", npy->rows(), cfg.vocab_size,
                                 a.dump_logits).c_str()
                   : "");
  if (g_interrupted) {  // the output is complete up to the interruption; scripts see the Ctrl-C
    std::fflush(stdout);
    std::exit(130);
  }
}

}  // namespace

void register_generate(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* c = app.add_subcommand("generate", "Generate text from a prompt (one sequence; GPU or CPU)");
  c->add_option("-m,--model", a->model_dir, "Hugging Face model directory")->required();
  c->add_option("-p,--prompt", a->prompt, "prompt text (needs tokenizer.json)");
  c->add_option("--ids", a->ids, "prompt token ids, comma-separated, e.g. 1,2,3");
  add_sampling_flags(c, a->sampling, "RNG seed (default 0)");
  add_device_flags(c, a->device);
  c->add_option("-n,--max-new-tokens", a->max_new_tokens,
                "tokens to generate (default: generation_config.json max_new_tokens, else 128)");
  c->add_flag("--json", a->json, "print {prompt_ids, generated_ids, stop_reason, text} as JSON");
  c->add_option("--dump-logits", a->dump_logits,
                "write fp32 logits of every position to FILE (.npy, shape (positions, vocab))");
  c->add_option("--stop", a->stops, "stop when the output contains STR (repeatable)");
  c->callback([a] { run_generate(*a); });
}

}  // namespace hogwild::cli
