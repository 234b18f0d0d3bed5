// kvcg/status.h — result codes shared by every kvcg API.
//
// A Code is what one operation or one call ended with. kOk and kNotFound are
// the two normal outcomes of an operation; every other code is an error that
// left the store unchanged for that operation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kvcg {

enum class Code : uint8_t {
  kOk = 0,            // Done. GET: value found. PUT/DELETE: a previous value existed.
  kNotFound,          // Done, but the key was absent (PUT/DELETE still took effect).
  kInvalidArgument,   // Malformed request (unknown op type, bad configuration).
  kKeyTooLarge,       // Key longer than Config::max_key_bytes. Nothing changed.
  kValueTooLarge,     // Value longer than Config::max_value_bytes. Nothing changed.
  kCapacityExhausted, // Storing this would exceed the configured capacity. Nothing changed.
  kUnavailable,       // The backend cannot serve (e.g. no GPU, or the store is closing).
  kTimedOut,          // An internal retry (GPU full, model switch) outlasted its bound.
  kInternal,          // A bug or a device failure; the message says which.
  kIoError,           // Durability: the append-only log could not be written, so the
                      // write is not acknowledged; writes are refused until it can be
                      // (Redis's MISCONF). Reads keep working.
};

// Stable, lowercase name of a code ("ok", "not_found", ...). Never null.
const char* CodeName(Code code);

// A Code with a human-readable message, returned by calls that are not
// per-operation (Store::Open, configuration checks). Cheap to copy when ok.
class Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  static Status InvalidArgument(std::string msg) { return {Code::kInvalidArgument, std::move(msg)}; }
  static Status Unavailable(std::string msg) { return {Code::kUnavailable, std::move(msg)}; }
  static Status Internal(std::string msg) { return {Code::kInternal, std::move(msg)}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // "ok", or "<code name>: <message>".
  std::string ToString() const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

}  // namespace kvcg
