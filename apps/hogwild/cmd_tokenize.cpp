// `hogwild tokenize (-m DIR | --tokenizer DIR|FILE) [--json] [--no-special] (TEXT | -)`: the token
// ids of a text, as AutoTokenizer.from_pretrained(DIR)(TEXT)["input_ids"] gives them (special
// tokens added by default; --no-special = add_special_tokens=False). Without --json each id is
// printed with its decoded piece (JSON-quoted, so spaces and newlines show) and its vocab string.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>

#include "apps/hogwild/commands.h"
#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace hogwild::cli {

namespace {

struct TokenizeArgs {
  std::string model_dir, tokenizer_path, text;
  bool as_json = false, no_special = false;
};

void run_tokenize(const TokenizeArgs& a) {
  const std::string& where = a.tokenizer_path.empty() ? a.model_dir : a.tokenizer_path;
  if (where.empty())
    fail("tokenize needs -m DIR or --tokenizer DIR (a directory with tokenizer.json).");
  if (!std::filesystem::exists(where))
    fail("{} does not exist; pass a Hugging Face model directory (with tokenizer.json).", where);
  Tokenizer tok = std::filesystem::is_directory(where) ? Tokenizer::from_dir(where)
                                                       : Tokenizer::from_file(where);
  std::string text = a.text;
  if (text == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  std::vector<int32_t> ids = tok.encode(text, !a.no_special);
  if (a.as_json) {
    std::printf("%s\n", nlohmann::json(ids).dump().c_str());
    return;
  }
  for (int32_t id : ids) {
    nlohmann::json piece = tok.piece(id);
    std::string vocab = tok.id_to_token(id).value_or("");
    std::printf("%d\t%s\t%s\n", id,
                piece.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str(),
                vocab.c_str());
  }
  std::printf("# %zu tokens, %zu bytes\n", ids.size(), text.size());
}

}  // namespace

void register_tokenize(CLI::App& app) {
  auto a = std::make_shared<TokenizeArgs>();
  CLI::App* cmd = app.add_subcommand("tokenize", "print the token ids of a text");
  cmd->add_option("-m,--model", a->model_dir, "Hugging Face model directory");
  cmd->add_option("--tokenizer", a->tokenizer_path,
                  "directory with tokenizer.json (+ tokenizer_config.json), or a tokenizer.json");
  cmd->add_flag("--json", a->as_json, "print only a JSON array of ids");
  cmd->add_flag("--no-special", a->no_special, "do not add special tokens (e.g. BOS)");
  cmd->add_option("text", a->text, "the text, or - to read it from stdin")->required();
  cmd->callback([a] { run_tokenize(*a); });
}

}  // namespace hogwild::cli
