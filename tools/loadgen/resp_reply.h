// Counting RESP replies in a byte stream, for the load generator: it only
// needs to know how many complete replies (and how many errors) arrived.
#pragma once

#include <cstddef>

namespace kvcg::loadgen {

// Length of the complete reply starting at data[0], 0 if incomplete, or -1 if
// malformed. *is_error is set for a top-level error reply.
long ReplyLength(const char* data, size_t size, bool* is_error);

}  // namespace kvcg::loadgen
