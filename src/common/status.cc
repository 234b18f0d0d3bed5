// Names for result codes; kept beside the enum's only non-header code.
#include "kvcg/status.h"

namespace kvcg {

const char* CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "ok";
    case Code::kNotFound: return "not_found";
    case Code::kInvalidArgument: return "invalid_argument";
    case Code::kKeyTooLarge: return "key_too_large";
    case Code::kValueTooLarge: return "value_too_large";
    case Code::kCapacityExhausted: return "capacity_exhausted";
    case Code::kUnavailable: return "unavailable";
    case Code::kTimedOut: return "timed_out";
    case Code::kInternal: return "internal";
    case Code::kIoError: return "io_error";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out = CodeName(code_);
  if (!message_.empty()) {
    out += ": ";
    out += message_;
  }
  return out;
}

}  // namespace kvcg
