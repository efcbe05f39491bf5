// The one table of ranges of a request's fields, and the one wording of each range error.
//
// Every surface that takes a request — `hogwild run`, `generate`, `eval`, `bench`, the HTTP server
// (which maps its JSON fields onto these: "hogwild.budget" is `budget`) and the engine itself —
// checks a field's value here, so the same sentence reaches the terminal and an HTTP 400:
//
//   budget is -1; it must be in 0..1000000 serial steps (0 = until an answer)
//
// The checks that relate several fields (workers against the layout and the formatting,
// snapshots against the budget) are in hogwild/request_check.h; the sampling fields are checked
// together by check_sampling (sampling/sampler.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace hogwild {

/// A checked field of a request.
enum class RequestField {
  workers,             // workers of a session (range: hogwild/request_check.h, by layout)
  budget,              // serial steps after the prefill
  snapshot,            // one serial step at which the finisher runs (also <= budget)
  collab_every,        // generated tokens between collaboration checks
  max_context,         // tokens in a worker's view (also <= the model's context)
  max_tokens,          // generated tokens per worker
  seed,                // base seed of a sampled run; -1 = a random one
  fixed_seed,          // seed of a reproducible artefact (a model, a problem pack): no random
  temperature,         // sampling temperature
  top_k,               // most likely tokens kept
  top_p,               // nucleus mass
  min_p,               // min-p filter
  repetition_penalty,  // HF repetition penalty
  stop,                // a stop string (bytes)
  kv_budget,           // tokens of the shared history still read (hogwild/forgetting.h)
  kv_chunk,            // tokens forgotten together (ForgetPolicy::chunk)
  kv_policy,           // what happens at the KV budget: evict or summarise (a name, no range)
  kv_redundancy,       // R-KV's redundancy weight of evict (ForgetPolicy::redundancy_weight)
  problem,             // the problem text of a hogwild request (not empty; no range)
  context,             // the prompt with the first serial step, against the context (no range)
};

/// One row of the table: an inclusive range [lo, hi] (lo excluded when lo_open) and the unit and
/// meaning of the value, as they appear in the message.
struct FieldRange {
  RequestField field;
  const char* name;  // in messages, and the JSON key of the HTTP API ("hogwild." for session keys)
  double lo, hi;
  bool lo_open;      // (lo, hi] instead of [lo, hi]
  bool integer;      // whole numbers only
  const char* unit;  // what the value counts and its special values, e.g. "serial steps (0 = ...)"
};

/// The table row of `f`.
const FieldRange& field_range(RequestField f);

/// A request field out of its range (or otherwise invalid). what() is the one sentence of that
/// error; field() says which field, so the HTTP server can name its JSON path as the `param`.
class RequestError : public Error {
 public:
  RequestError(RequestField field, const std::string& msg) : Error(msg), field_(field) {}
  RequestField field() const { return field_; }

 private:
  RequestField field_;
};

/// Throws RequestError "NAME is V; it must be in LO..HI UNIT" when `v` is outside the range of
/// integer field `f`.
void check_field(RequestField f, int64_t v);

/// The sentence of `value` (as written, e.g. a whole number beyond 64 bits) outside the range of
/// `f`: "NAME is VALUE; it must be in LO..HI UNIT".
std::string out_of_range_text(RequestField f, std::string_view value);

/// Throws RequestError when `v` (a real field: temperature, top_p, ...) is outside its range, is
/// not finite, or leaves it once rounded to the engine's 32-bit float (top_p 1e-300 is 0 there).
void check_real_field(RequestField f, double v);

/// Throws RequestError (RequestField::stop) unless `stop` has 1..256 bytes (the stop row): an
/// empty stop string would end generation at once.
void check_stop_string(std::string_view stop);
/// Stop strings a request may give at most (the server's `stop`, `generate --stop`).
inline constexpr size_t kMaxStopStrings = 8;
/// Throws RequestError (RequestField::stop) unless there are at most kMaxStopStrings stop strings
/// and each passes check_stop_string and is valid UTF-8 (output text is matched as UTF-8).
void check_stop_strings(const std::vector<std::string>& stops);

/// "LO..HI" (integers) or "[LO, HI]" / "(LO, HI]" (reals), as the messages print the range of `f`.
std::string range_text(RequestField f);

}  // namespace hogwild
