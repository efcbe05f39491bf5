// RunFiles: the outputs of `hogwild run` (run_files.h).
#include "hogwild/run_files.h"

#include <filesystem>

#include "core/error.h"
#include "core/io.h"
#include "core/json_text.h"

namespace hogwild {

namespace {
std::string partial_path(const std::string& json) { return json + ".partial.jsonl"; }
}  // namespace

nlohmann::json run_settings_json(const Session& session, const Formatting& formatting,
                                 const StopPolicy& stop) {
  // The formatting as the run used it: names, prefixes, headers, forbidden texts, answer kind.
  nlohmann::json f = nlohmann::json::parse(dump_json(formatting.to_json()));
  const char* eos = stop.ignore_eos || formatting.forbidden.eos ? "forbidden" : "ends the worker";
  return {{"formatting", f},
          {"forbidden_ids", session.forbidden_ids()},
          {"stop",
           {{"eos_ids", session.eos_ids()},
            {"sources", session.eos_ids() == stop.eos_ids ? nlohmann::json(stop.sources)
                                                          : nlohmann::json(nullptr)},
            {"eos", eos},
            {"ignore_eos", stop.ignore_eos}}}};
}

void check_output_paths(const RunFilePaths& paths) {
  const std::string* all[] = {&paths.json, &paths.dump_views, &paths.dump_logits};
  const char* flags[] = {"--json", "--dump-views", "--dump-logits"};
  for (int i = 0; i < 3; ++i)
    for (int k = i + 1; k < 3; ++k)
      if (!all[i]->empty() && *all[i] == *all[k])
        fail("{} and {} both name '{}'; give them different files", flags[i], flags[k], *all[i]);
}

RunFiles::RunFiles(const RunFilePaths& paths, int64_t vocab_size) : paths_(paths) {
  namespace fs = std::filesystem;
  check_output_paths(paths);
  if (!paths.json.empty() && paths.json != "-" && !is_special_file(paths.json)) {
    // The final transcript is created at the end (FILE.tmp renamed to FILE); check its directory
    // now by creating the partial transcript beside it.
    std::error_code ec;
    if (fs::is_directory(paths.json, ec))
      fail("--json: '{}' is a directory; give a file name inside it", paths.json);
    partial_ = std::make_unique<OutputFile>(partial_path(paths.json), "--json");
  }
  if (!paths.dump_views.empty()) views_ = std::make_unique<OutputFile>(paths.dump_views, "--dump-views");
  if (!paths.dump_logits.empty())
    logits_ = std::make_unique<LogitsDumper>(paths.dump_logits, vocab_size);
}

RunFiles::~RunFiles() = default;

bool RunFiles::uses_stdout() const { return paths_.json == "-" || paths_.dump_views == "-"; }

void RunFiles::start(const Session& session, const TextCodec& codec,
                     std::vector<std::string> worker_names, const nlohmann::json& header) {
  header_ = header;
  if (!paths_.json.empty()) {
    transcript_ = std::make_unique<TranscriptRecorder>(std::move(worker_names));
    if (partial_) transcript_->stream_to(partial_.get(), header_);
    obs_.add(transcript_.get());
  }
  if (views_) {
    view_dumper_ = std::make_unique<ViewDumper>(*views_, codec);
    view_dumper_->attach(&session);
    obs_.add(view_dumper_.get());
  }
  if (logits_) obs_.add(logits_.get());
}

void RunFiles::finish(const SessionResult& result) {
  if (views_) views_->close();
  if (logits_) logits_->close();
  if (transcript_) {
    nlohmann::json j = header_;
    j.update(transcript_->to_json(result));
    AtomicOutputFile out(paths_.json, "--json");
    out.write(dump_json(j, 1) + "\n");
    out.commit();
    if (partial_) {
      partial_->close();
      std::error_code ec;
      std::filesystem::remove(partial_path(paths_.json), ec);
    }
  }
}

}  // namespace hogwild
