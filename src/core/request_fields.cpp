#include "core/request_fields.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/utf8.h"

namespace hogwild {

namespace {

constexpr double kInt64Max = 9223372036854775807.0;

// The table. Budgets and snapshots in serial steps, counts of tokens: a million is far beyond any
// context a model has, and small enough that a mistyped count is caught.
constexpr FieldRange kRanges[] = {
    {RequestField::workers, "workers", 1, 64, false, true, "workers"},
    {RequestField::budget, "budget", 0, 1000000, false, true, "serial steps (0 = until an answer)"},
    {RequestField::snapshot, "snapshot", 1, 1000000, false, true, "serial steps"},
    {RequestField::collab_every, "collab_every", -1, 1000000, false, true,
     "generated tokens (0 = no collaboration check, -1 = the formatting's)"},
    {RequestField::max_context, "max_context", 0, 2147483647, false, true,
     "tokens (0 = the model's context length)"},
    {RequestField::max_tokens, "max_tokens", 0, 1 << 20, false, true,
     "generated tokens per worker (0 = no limit)"},
    {RequestField::seed, "seed", -1, kInt64Max, false, true, "(-1 = a random seed)"},
    {RequestField::fixed_seed, "seed", 0, kInt64Max, false, true,
     "(the same seed gives the same output)"},
    {RequestField::temperature, "temperature", 0, 2, false, false, "(0 = greedy)"},
    {RequestField::top_k, "top_k", 0, 2147483647, false, true, "tokens (0 = off)"},
    {RequestField::top_p, "top_p", 0, 1, true, false, "(1 = off)"},
    {RequestField::min_p, "min_p", 0, 1, false, false, "(0 = off)"},
    {RequestField::repetition_penalty, "repetition_penalty", 0, 10, true, false, "(1 = off)"},
    {RequestField::stop, "stop", 1, 256, false, true, "bytes per stop string"},
    {RequestField::kv_budget, "kv_budget", 0, 2147483647, false, true,
     "tokens of the shared history kept in attention (0 = unlimited)"},
    {RequestField::kv_chunk, "kv_chunk", 0, 4096, false, true,
     "tokens forgotten together (0 = the default, 16)"},
    // A name (hogwild/request_check.h check_kv_policy); the row gives its name in messages.
    {RequestField::kv_policy, "kv_policy", 0, 0, false, true, "(evict or summarise)"},
    {RequestField::kv_redundancy, "kv_redundancy", 0, 1, false, false,
     "(the weight of key redundancy against attention in what evict forgets, R-KV's 1 - lambda; "
     "0 = off)"},
    // Text (hogwild/request_check.h check_problem); the row gives its name in messages.
    {RequestField::problem, "problem", 0, 0, false, true, "(text)"},
    // A sum of token counts (hogwild/request_check.h check_first_step_fits); the row names it.
    {RequestField::context, "context", 0, 0, false, true, "(tokens of the longest view)"},
};

[[noreturn]] void out_of_range(RequestField f, const std::string& value) {
  throw RequestError(f, out_of_range_text(f, value));
}

}  // namespace

std::string out_of_range_text(RequestField f, std::string_view value) {
  const FieldRange& r = field_range(f);
  return fmt::format("{} is {}; it must be in {} {}", r.name, value, range_text(f), r.unit);
}

const FieldRange& field_range(RequestField f) {
  for (const FieldRange& r : kRanges)
    if (r.field == f) return r;
  HOGWILD_CHECK(false && "a RequestField without a row in kRanges");
  return kRanges[0];
}

std::string range_text(RequestField f) {
  const FieldRange& r = field_range(f);
  if (r.integer)
    return fmt::format(
        "{}..{}", static_cast<int64_t>(r.lo),
        r.hi >= kInt64Max ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(r.hi));
  return fmt::format("{}{:g}, {:g}]", r.lo_open ? "(" : "[", r.lo, r.hi);
}

void check_field(RequestField f, int64_t v) {
  const FieldRange& r = field_range(f);
  const double d = static_cast<double>(v);
  const bool above = r.hi < kInt64Max && d > r.hi;
  if (d < r.lo || (r.lo_open && d == r.lo) || above) out_of_range(f, fmt::format("{}", v));
}

void check_stop_string(std::string_view stop) {
  const FieldRange& r = field_range(RequestField::stop);
  if (stop.empty())
    throw RequestError(RequestField::stop,
                       "a stop string is empty; it would stop at once: give some text");
  if (static_cast<double>(stop.size()) > r.hi)
    throw RequestError(RequestField::stop,
                       fmt::format("a stop string has {} bytes; it must be in {} {}", stop.size(),
                                   range_text(RequestField::stop), r.unit));
}

void check_stop_strings(const std::vector<std::string>& stops) {
  if (stops.size() > kMaxStopStrings)
    throw RequestError(
        RequestField::stop,
        fmt::format("{} stop strings were given; give at most {}", stops.size(), kMaxStopStrings));
  for (const std::string& s : stops) {
    check_stop_string(s);
    if (!utf8_valid(s))
      throw RequestError(RequestField::stop,
                         "a stop string is not valid UTF-8; give text (the output is matched as "
                         "UTF-8 text)");
  }
}

void check_real_field(RequestField f, double v) {
  const FieldRange& r = field_range(f);
  auto in = [&](double x) {
    return std::isfinite(x) && (r.lo_open ? x > r.lo : x >= r.lo) && x <= r.hi;
  };
  // The shortest text that reads back as `v`: 2.0000000000000004 is not printed as "2".
  if (!in(v)) out_of_range(f, fmt::format("{}", v));
  // The engine samples in 32-bit floats: the value must be in range once rounded to one too.
  const float single = static_cast<float>(v);
  if (!in(single))
    throw RequestError(f, fmt::format("{} is {}, which is {} as the engine's 32-bit float; it "
                                      "must be in {} {}",
                                      r.name, v, single, range_text(f), r.unit));
}

}  // namespace hogwild
