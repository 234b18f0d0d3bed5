// Per-key linearizability checker for recorded kvcg histories.
//
// Model: every key is an independent register holding "absent" or a byte
// string, and the operations are exactly kvcg's OpTypes (kvcg/batch.h):
//   GET            -> value | not found                     (no change)
//   PUT(v)         -> previous value | not found             (stores v)
//   DELETE         -> previous value | not found             (makes it absent)
//   CAS(e|absent,v)-> current value | not found; stores v iff the key held e
//                     (or, with expect_absent, iff it was absent)
// Operations on different keys commute, so linearizability of the whole
// history is linearizability of each key's sub-history (P-compositionality,
// Herlihy & Wing); each key is checked on its own.
//
// The search is Wing & Gong's, with Lowe's memoisation: a depth-first walk
// over "which operation takes effect next", where only operations invoked
// before the earliest pending response may go next, pruned by a set of
// already-explored (linearized set, register value) configurations. Two
// reductions keep it near linear on real histories: a state-preserving
// operation (a GET, a CAS that does not store) that fits the current value is
// taken without branching (its result pins the value it sees, so moving it
// first never invalidates a linearization),
// and the linearized set is hashed incrementally (128-bit Zobrist) so a memo
// probe costs O(1) instead of O(n). A step budget turns pathological inputs
// into Verdict::kUnknown instead of a hang.
//
// On failure the checker finds the earliest point at which the history stops
// being linearizable (prefixes with still-running operations treated as
// pending are linearizable whenever the whole is) and then the shortest
// window of operations ending there that cannot be explained whatever value
// the key held before it. That window is the explanation.
//
// Thread safety: Check() is a pure function of its input; concurrent calls
// are fine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvcg/batch.h"
#include "kvcg/status.h"

namespace kvcg::lincheck {

// One completed operation as a client saw it.
struct Event {
  std::string key;
  OpType type = OpType::kGet;
  std::string value;           // PUT / CAS: the value to store.
  std::string expected;        // CAS: the value expected (ignored with expect_absent).
  bool expect_absent = false;  // CAS: store only if the key is absent.

  Code code = Code::kOk;  // kOk / kNotFound; any other code means "took no effect"
                          // and the event is excluded from the check.
  std::string output;     // kOk: the value read / the previous value.

  // Invocation and response times on one clock shared by all clients (a
  // logical counter or steady-clock ns). Operation a precedes operation b in
  // real time iff a.response < b.invoke; equal times count as concurrent.
  uint64_t invoke = 0;
  uint64_t response = 0;

  // Program order beyond real time: events with the same non-zero
  // order_group on the same key must take effect in increasing order_seq
  // (equal order_seq: no constraint). The recorder uses this for kvcg's
  // same-key order inside a batch and across one submitter's Submit calls.
  uint64_t order_group = 0;
  uint64_t order_seq = 0;

  // For explanations only.
  uint32_t client = 0;
  uint64_t batch = 0;  // Recorder-assigned batch number, 0 = unknown.
  uint32_t batch_index = 0;
};

enum class Verdict : uint8_t {
  kLinearizable,
  kNotLinearizable,
  kUnknown,  // The step budget ran out (or the input was malformed) before a verdict.
};
const char* VerdictName(Verdict verdict);

struct CheckOptions {
  // Search steps (operations tentatively linearized) allowed per key, for the
  // main check; the explanation search gets the same budget again.
  uint64_t max_steps_per_key = 50'000'000;
  // Compute the minimal offending window on failure (costs a few extra
  // searches of the failing key).
  bool explain = true;
};

struct CheckResult {
  Verdict verdict = Verdict::kLinearizable;
  // Empty when linearizable. Otherwise names the key and, for a failure,
  // lists the minimal offending window one operation per line.
  std::string explanation;
  std::string failed_key;     // First key found not linearizable (or unknown).
  std::vector<Event> window;  // That key's minimal offending window, by invocation time.

  size_t keys = 0;        // Distinct keys checked.
  size_t operations = 0;  // Events checked (excluding errors).
  size_t excluded = 0;    // Events excluded because they returned an error code.
  uint64_t steps = 0;     // Search steps over all keys.

  bool linearizable() const { return verdict == Verdict::kLinearizable; }
};

// Checks `history` (any order; events of all keys mixed). Keys start absent.
// Every key is checked even after a failure, so `steps` and the verdict
// cover the whole history; the explanation describes the first failing key
// (in key order).
CheckResult Check(const std::vector<Event>& history, const CheckOptions& options = {});

// One line describing an event, e.g.
//   c3 b17.2 [120,131] CAS "k1" expect "a" -> "b" => ok "a"
// Bytes outside printable ASCII are escaped; long strings are shortened.
std::string FormatEvent(const Event& event);
// Printable, quoted, shortened form of a byte string.
std::string Quote(std::string_view bytes);

}  // namespace kvcg::lincheck
