// `hogwild generate`: plain single-sequence generation (--device: CUDA when a GPU is usable, else
// the CPU backend; backend_flags.h).
//
//   hogwild generate -m DIR (-p TEXT | -f FILE | --ids 1,2,3 | --messages FILE) [--chat]
//       [--system TEXT] [--template-kwargs JSON] [--template-name NAME] [--special]
//       [--temperature T] [--top-k K] [--top-p P] [--min-p P] [--repetition-penalty R] [--greedy]
//       [--seed N] [-n N] [-c N] [--ignore-eos] [--json] [--dump-logits FILE] [--stop STR]...
//
// Sampling defaults come from DIR/generation_config.json (transformers' defaults when absent);
// giving --temperature/--top-k/--top-p/--min-p turns sampling on, --greedy or --temperature 0
// turns it off. -p needs DIR/tokenizer.json and encodes the text as `tokenizer(text)` does
// (special tokens such as a Llama BOS added); -p - and -f - read stdin; --ids feeds ids as they
// are. Chat mode (--chat, --system or --messages): the text is the user's message, rendered by
// the model's chat template with the generation prompt and encoded without adding special tokens
// (apply_chat_template(tokenize=True)). The output text leaves out special tokens (such as the
// end-of-turn token) unless --special. Generation stops at the stop policy's EOS ids
// (sampling/stop_policy.h, shown on stderr) unless --ignore-eos.
//
// The completion runs on the Engine as a plain request (engine/plain.h: one worker, formatting
// "plain", which inserts nothing), the one decode loop of every command and the server.
//
// --dump-logits FILE writes a NumPy .npy file, float32, shape (n_prompt + n_generated, vocab_size):
// row i holds the logits at position i of prompt ++ generated (predicting token i + 1), in the
// order transformers' `model(input_ids).logits[0]` returns them for that sequence: after the
// generation, one pass over that sequence computes them (on CUDA in bf16 they may differ from the
// rows the tokens were drawn from by rounding; `run --dump-logits` keeps those).
#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "apps/hogwild/backend_flags.h"
#include "apps/hogwild/chat_flags.h"
#include "apps/hogwild/cli_util.h"
#include "apps/hogwild/commands.h"
#include "apps/hogwild/sampling_flags.h"
#include "core/error.h"
#include "core/json_text.h"
#include "core/request_fields.h"
#include "engine/plain.h"
#include "hogwild/codec.h"
#include "model/weights.h"
#include "sampling/generation_config.h"
#include "sampling/npy.h"
#include "sampling/stop_policy.h"
#include "sampling/stop_strings.h"
#include "tokenizer/tokenizer.h"

namespace hogwild::cli {
namespace {

struct GenerateArgs {
  std::string model_dir, prompt, prompt_file, ids, dump_logits;
  SamplingFlags sampling;
  DeviceFlags device;
  ChatFlags chat_flags;
  std::optional<int64_t> max_new_tokens;
  int64_t max_context = 0;
  std::vector<std::string> stops;
  bool json = false, chat = false, special = false, ignore_eos = false;
};

std::vector<int32_t> parse_ids(const std::string& s) {
  std::vector<int32_t> ids;
  for (const ListPart& p : parse_whole_list(s)) {
    if (!p.value || *p.value < 0 || *p.value > INT32_MAX)
      fail("--ids: '{}' is not a token id; give comma-separated non-negative integers like 1,2,3",
           p.text);
    ids.push_back(static_cast<int32_t>(*p.value));
  }
  return ids;
}

/// The flags that need nothing loaded: one prompt source, chat mode with text, the ranges.
/// Throws hogwild::Error.
void check_generate_flags(const GenerateArgs& a, bool chat) {
  const int given = !a.prompt.empty() + !a.prompt_file.empty() + !a.ids.empty() +
                    !a.chat_flags.messages_path.empty();
  if (given == 0)
    fail("no prompt: give -p TEXT (not empty; - = stdin), -f FILE, --ids 1,2,3 or --messages FILE");
  if (given > 1) fail("give one of -p TEXT, -f FILE, --ids 1,2,3 or --messages FILE, not several");
  if (chat && !a.ids.empty())
    fail("--ids feeds token ids as they are; chat mode (--chat, --system, --messages) needs text");
  if (!a.chat_flags.messages_path.empty() && !a.chat_flags.system.empty())
    fail("--system adds a system message to -p/-f; with --messages put it in the messages file");
  if (a.max_new_tokens) check_field(RequestField::max_tokens, *a.max_new_tokens);
  check_field(RequestField::max_context, a.max_context);
  check_stop_strings(a.stops);  // core/request_fields.h
}

/// The model directory's tokenizer, or nullptr when it has none and --ids needs none. Throws
/// hogwild::Error when the directory is missing or text (a prompt, chat, --stop) needs one.
std::unique_ptr<Tokenizer> load_generate_tokenizer(const GenerateArgs& a, bool chat) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(a.model_dir, ec))
    fail("model directory '{}' does not exist; pass an HF model directory with -m", a.model_dir);
  std::unique_ptr<Tokenizer> tok;
  if (fs::exists(fs::path(a.model_dir) / "tokenizer.json", ec))
    tok = std::make_unique<Tokenizer>(Tokenizer::from_dir(a.model_dir));
  if (a.ids.empty() && !tok)
    fail("{} needs {}/tokenizer.json, which is missing; pass token ids with --ids instead",
         chat ? "chat mode" : "-p", a.model_dir);
  if (!a.stops.empty() && !tok)
    fail("--stop needs {}/tokenizer.json to decode the output, which is missing", a.model_dir);
  return tok;
}

/// The prompt's token ids. The flag given decides: --ids is used as is even when the model has a
/// tokenizer. Chat mode renders the template, which holds its own special tokens (none are added
/// when encoding).
std::vector<int32_t> generate_prompt_ids(const GenerateArgs& a, bool chat, const Tokenizer* tok) {
  if (!a.ids.empty()) return parse_ids(a.ids);
  if (chat) {
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    if (!a.chat_flags.messages_path.empty()) {
      messages = load_messages(a.chat_flags.messages_path);
    } else {
      if (!a.chat_flags.system.empty())
        messages.push_back({{"role", "system"}, {"content", a.chat_flags.system}});
      messages.push_back({{"role", "user"}, {"content", a.prompt}});
    }
    return tok->encode(render_chat(a.model_dir, a.chat_flags, messages), false);
  }
  return tok->encode(a.prompt, true);
}

/// The prompt and flags against the model's config.json, before the weights load (a big model
/// takes a while); returns the stop set. Throws hogwild::Error: --ctx-size beyond the model's
/// context, a tokenizer larger than the vocabulary, a prompt id outside it.
StopPolicy check_generate_model(const GenerateArgs& a, const ModelConfig& config,
                                const GenerationConfig& gen, const Tokenizer* tok,
                                const std::vector<int32_t>& prompt) {
  if (a.max_context > config.max_position_embeddings && config.max_position_embeddings > 0)
    fail(
        "--ctx-size {} is beyond the model's context of {} tokens (max_position_embeddings in "
        "config.json); give at most {}",
        a.max_context, config.max_position_embeddings, config.max_position_embeddings);
  if (tok) tok->check_fits(config.vocab_size, a.model_dir);
  const StopPolicy stop = resolve_stop_policy(
      tok && tok->config().eos_token
          ? std::optional<TokenizerEos>(TokenizerEos{*tok->config().eos_token, tok->eos_id()})
          : std::nullopt,
      config.eos_token_id, gen.eos_token_id, config.vocab_size, a.ignore_eos);
  for (int32_t id : prompt)
    if (id >= config.vocab_size)
      fail("prompt token id {} is outside the model's vocabulary [0, {})", id, config.vocab_size);
  return stop;
}

/// What generate shows on stdout while it runs: text through the incremental detokenizer, held
/// back while it could be the start of a stop string; ids when there is no tokenizer. Nothing is
/// streamed with --json.
class GenerateStream {
 public:
  GenerateStream(const Tokenizer* tok, const GenerateArgs& a) : stop_(a.stops), json_(a.json) {
    if (tok) dec_ = std::make_unique<IncrementalDecoder>(*tok, /*skip_special_tokens=*/!a.special);
  }

  /// Shows one drawn id (an end-of-sequence id too: its text is "" unless --special); returns
  /// true when a stop string is now complete.
  bool push(int32_t id) {
    if (!dec_) {
      if (!json_) {
        std::printf("%d ", id);
        std::fflush(stdout);
      }
      return false;
    }
    show(stop_.push(dec_->push(id)));
    return stop_.stopped();
  }

  /// The whole text, cut at a stop string ("" without a tokenizer).
  std::string finish() {
    if (!dec_) return {};
    text_ += stop_.push(dec_->flush());
    text_ += stop_.flush();
    return text_;
  }
  size_t printed() const { return printed_; }

 private:
  /// Appends text released by the stop strings and prints it unless --json.
  void show(const std::string& released) {
    text_ += released;
    if (json_) return;
    std::fwrite(released.data(), 1, released.size(), stdout);
    printed_ = text_.size();
    std::fflush(stdout);
  }

  std::unique_ptr<IncrementalDecoder> dec_;
  StopStrings stop_;
  std::string text_;    // the text released so far
  size_t printed_ = 0;  // bytes of text_ already written
  bool json_ = false;
};

/// Runs the completion on the Engine (engine/plain.h), streaming into `stream`; with -n 0 only
/// the prompt's prefill. Dumps the logits of prompt ++ generated to `npy` when given.
PlainResult generate_on_engine(Backend& backend, const Tokenizer* tok, PlainRequest req,
                               GenerateStream& stream, NpyWriter* npy) {
  const ModelConfig& cfg = backend.config();
  const std::vector<int32_t> prompt = req.prompt;
  const int64_t chunk = std::max<int64_t>(512, static_cast<int64_t>(prompt.size()));
  std::function<void(const float*, int64_t)> rows;
  if (npy) rows = [npy](const float* l, int64_t n) { npy->append(l, n); };
  PlainResult r;
  if (req.max_tokens == 0) {  // the prompt's logits only
    check_plain_prompt(cfg, prompt, req.max_context, 0);
    r.stop_reason = StopReason::max_new_tokens;
    r.session.prompt_tokens = static_cast<int64_t>(prompt.size());
    r.session.prefill_seconds = sequence_logits(backend, prompt, chunk, rows);
    return r;
  }
  std::unique_ptr<TextCodec> codec;
  if (tok)
    codec = std::make_unique<TokenizerCodec>(*tok);
  else
    codec = std::make_unique<IdCodec>(static_cast<int32_t>(cfg.vocab_size));
  r = generate_plain(backend, *codec, std::move(req),
                     [&stream](int32_t id) { return stream.push(id); });
  if (npy) {
    std::vector<int32_t> seq = prompt;
    seq.insert(seq.end(), r.generated.begin(), r.generated.end());
    sequence_logits(backend, seq, chunk, rows);
  }
  return r;
}

/// stdout (the JSON or the rest of the text) and the summary line on stderr.
void print_generate_result(const GenerateArgs& a, const PlainResult& r, bool has_text,
                           const std::string& text, size_t printed,
                           const std::vector<int32_t>& prompt, uint64_t seed, const NpyWriter* npy,
                           int64_t vocab_size) {
  if (a.json) {
    nlohmann::json j = {{"prompt_ids", prompt},
                        {"generated_ids", r.generated},
                        {"stop_reason", stop_reason_name(r.stop_reason)}};
    if (has_text) set_text(j, "text", text);
    j["seed"] = seed;
    std::printf("%s\n", dump_json(j).c_str());
  } else {
    if (text.size() > printed) std::fwrite(text.data() + printed, 1, text.size() - printed, stdout);
    std::printf("\n");
  }
  const SessionResult& s = r.session;
  const double dec_tps = s.decode_seconds > 0 ? s.serial_steps / s.decode_seconds : 0;
  std::fprintf(
      stderr,
      "prompt %lld tokens in %.3f s (%.1f tok/s); generated %zu tokens, decode %.1f "
      "tok/s; stop: %s%s\n",
      static_cast<long long>(s.prompt_tokens), s.prefill_seconds,
      s.prompt_tokens / std::max(s.prefill_seconds, 1e-9), r.generated.size(), dec_tps,
      std::string(stop_reason_name(r.stop_reason)).c_str(),
      npy ? fmt::format("; logits ({} x {}) -> {}", npy->rows(), vocab_size, a.dump_logits).c_str()
          : "");
}

void run_generate(GenerateArgs a) {
  const bool chat = a.chat || !a.chat_flags.system.empty() || !a.chat_flags.messages_path.empty();
  check_generate_flags(a, chat);
  if (!a.prompt_file.empty())
    a.prompt = file_or_stdin(a.prompt_file, "prompt file (-f)");
  else
    a.prompt = text_or_stdin(a.prompt);
  if (a.ids.empty() && a.chat_flags.messages_path.empty() && a.prompt.empty())
    fail("the prompt is empty; give some text with -p or -f");
  const std::unique_ptr<Tokenizer> tok = load_generate_tokenizer(a, chat);

  const GenerationConfig gen = load_generation_config(a.model_dir);
  const uint64_t seed = resolve_seed(a.sampling.seed);
  PlainRequest req;
  req.sampling = sampling_params(a.sampling, gen, seed);
  check_sampling(req.sampling);  // sampling/sampler.h: the ranges, before anything loads
  req.prompt = generate_prompt_ids(a, chat, tok.get());
  const std::vector<int32_t> prompt = req.prompt;
  const ModelConfig config = load_model_config(a.model_dir);
  const StopPolicy stop = check_generate_model(a, config, gen, tok.get(), prompt);
  const std::string dev = resolve_device(a.device, config);
  std::unique_ptr<Backend> backend =
      make_backend(a.model_dir, dev, a.device, static_cast<int64_t>(prompt.size()));
  const ModelConfig& cfg = backend->config();

  req.max_tokens = a.max_new_tokens.value_or(gen.max_new_tokens.value_or(128));
  if (req.max_tokens < 0) fail("-n must be >= 0, got {}", req.max_tokens);
  req.max_context = a.max_context;
  StopSignals signals;
  req.interrupt = signals.flag();
  req.stop_ids = stop.eos_ids;
  req.ignore_eos = stop.ignore_eos;
  require_kv_tokens(*backend, static_cast<int64_t>(prompt.size()) + req.max_tokens,
                    "lower -n or raise --kv-tokens");

  GenerateStream stream(tok.get(), a);
  std::unique_ptr<NpyWriter> npy;
  if (!a.dump_logits.empty()) npy = std::make_unique<NpyWriter>(a.dump_logits, cfg.vocab_size);

  // Ctrl-C / SIGTERM: stop after the current token, print what was generated, exit 130 / 143
  // (as `run`).
  std::fprintf(stderr, "sampling: %s; stop ids: %s\n", req.sampling.describe().c_str(),
               stop.describe().c_str());
  const PlainResult r = generate_on_engine(*backend, tok.get(), std::move(req), stream, npy.get());
  const std::string text = stream.finish();
  if (npy) npy->close();
  print_generate_result(a, r, tok != nullptr, text, stream.printed(), prompt, seed, npy.get(),
                        cfg.vocab_size);
  // The output is complete up to the interruption; scripts see the signal in the exit status.
  if (signals.stopped()) exit_after_signal(signals.exit_code());
}

}  // namespace

void register_generate(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* c =
      app.add_subcommand("generate", "Generate text from a prompt (one sequence; GPU or CPU)");
  c->add_option("-m,--model", a->model_dir, "Hugging Face model directory")->required();
  c->add_option("-p,--prompt", a->prompt, "prompt text (needs tokenizer.json; - = stdin)");
  c->add_option("-f,--file", a->prompt_file, "read the prompt text from FILE (- = stdin)")
      ->check(non_empty_path());
  c->add_option("--ids", a->ids, "prompt token ids, comma-separated, e.g. 1,2,3");
  c->add_flag("--chat", a->chat,
              "the prompt is a user message rendered with the model's chat template");
  c->add_option("--system", a->chat_flags.system, "chat mode with this system message first");
  c->add_option("--messages", a->chat_flags.messages_path,
                "chat mode with the messages of this JSON file ([{\"role\", \"content\"}...]; - = "
                "stdin)");
  add_template_flags(c, a->chat_flags);
  c->add_flag("--special", a->special,
              "print special tokens (e.g. the end-of-turn token) in the output text");
  add_sampling_flags(c, a->sampling, "RNG seed");
  add_device_flags(c, a->device);
  add_threads_flag(c);
  c->add_option("-n,--max-new-tokens,--n-predict", a->max_new_tokens,
                "tokens to generate [default: generation_config.json max_new_tokens, else 128]");
  c->add_option("-c,--ctx-size", a->max_context,
                "context length in tokens, prompt included (0 = the model's "
                "max_position_embeddings)");
  c->add_flag("--ignore-eos", a->ignore_eos, "do not stop at the EOS ids (llama.cpp)");
  c->add_flag("--json", a->json, "print {prompt_ids, generated_ids, stop_reason, text} as JSON");
  c->add_option("--dump-logits", a->dump_logits,
                "write fp32 logits of every position to FILE (.npy, shape (positions, vocab))")
      ->check(npy_path());
  c->add_option("--stop", a->stops, "stop when the output contains STR (repeatable)");
  c->callback([a] { run_generate(*a); });
}

}  // namespace hogwild::cli
