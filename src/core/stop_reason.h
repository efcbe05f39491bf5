// Why a session, one of its workers, a plain generation or a served choice stopped.
//
// One enum for the whole engine; the words it stands for ("answer", "budget", ...) appear only at
// the output boundary (transcripts, the eval results, the server's JSON, the terminal), through
// stop_reason_name, so every output keeps the words it always had.
#pragma once

#include <ostream>
#include <string_view>

namespace hogwild {

/// Why something stopped. A session (hogwild/session.h SessionResult) stops with answer, budget,
/// eos, max_tokens, max_context, interrupted, cancelled or error; an independent-layout session
/// whose workers stopped for different reasons with mixed; a worker of the independent layout
/// (WorkerResult) with answer, eos, max_tokens, max_context, or the session's own when it was
/// still writing. The server reports stop when one of the request's stop strings ended a choice.
/// A plain completion (engine/plain.h, `hogwild generate`) stops with eos, stop_string,
/// max_new_tokens, context_length or interrupted.
enum class StopReason {
  none,            // "": still running
  answer,          // a finished step held a final answer
  budget,          // the serial-step budget was reached
  eos,             // an end-of-sequence token (where allowed)
  max_tokens,      // a worker reached its token cap
  max_context,     // a view reached the context limit
  interrupted,     // Ctrl-C / SIGTERM (the interrupt flag)
  cancelled,       // cancelled between steps (Engine::cancel, a closed connection)
  error,           // a failure ended it (a forward threw; an eval run that could not start)
  mixed,           // independent layout: the workers stopped for different reasons
  stop,            // server: one of the request's stop strings
  stop_string,     // plain generation: one of the stop strings
  max_new_tokens,  // plain generation: max_new_tokens generated
  context_length,  // plain generation: the model's context is full
};

/// The word an output writes for a reason: "" for none, else the enumerator's name ("answer",
/// "max_tokens", ...).
std::string_view stop_reason_name(StopReason r);

/// Prints stop_reason_name(r) (for logs and test failure messages).
inline std::ostream& operator<<(std::ostream& os, StopReason r) {
  return os << stop_reason_name(r);
}

}  // namespace hogwild
