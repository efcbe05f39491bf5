#include "core/stop_reason.h"

namespace hogwild {

std::string_view stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::none:
      return "";
    case StopReason::answer:
      return "answer";
    case StopReason::budget:
      return "budget";
    case StopReason::eos:
      return "eos";
    case StopReason::max_tokens:
      return "max_tokens";
    case StopReason::max_context:
      return "max_context";
    case StopReason::interrupted:
      return "interrupted";
    case StopReason::cancelled:
      return "cancelled";
    case StopReason::error:
      return "error";
    case StopReason::mixed:
      return "mixed";
    case StopReason::stop:
      return "stop";
    case StopReason::stop_string:
      return "stop_string";
    case StopReason::max_new_tokens:
      return "max_new_tokens";
    case StopReason::context_length:
      return "context_length";
  }
  return "";
}

}  // namespace hogwild
