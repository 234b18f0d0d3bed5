// SharedRound: one store batch for the connections of one I/O thread
// (Mega-KV's periodic batching, with one pass of the event loop as the
// period).
//
// Why. A connection's round is one read's worth of commands — a client's
// pipeline, often a dozen ops. Submitting each round as its own batch costs
// the store one Submit (engine routing, a pipeline hand-off, a completion)
// per connection and read, and hands the GPU tiny batches. Instead the loop
// collects the rounds of every connection it serves during one iteration of
// its event loop into one batch (IoThread::pending) and submits it once, at
// the end of the iteration — the latency bound: one pass over the ready
// sockets — or once it holds `max-batch-ops` operations (checked after each
// connection's dispatch, so a batch may pass that by one connection's round).
//
// Nothing changes for a connection. Its ops are one contiguous range of the
// batch, in command order, and it has at most one round in flight, so its
// same-key order is the batch order; between connections Redis promises no
// order for commands in flight at the same time. Results are shared: the
// round's Results lives until its last member has written its replies
// (every value is copied into a reply buffer), then goes back to the store.
//
// Early answers (Store::SubmitWithEarlyAnswers). On the engine, a member
// whose ops were all answered while the batch was routed (hot-cache hits)
// finishes its commands at once, inside Submit, instead of waiting behind
// the other members' GPU work: its replies wait only for its own earlier
// commands. It is then free to join the next round, and the round's final
// results skip it.
//
// Rounds are recycled by their loop (no allocation per round once warm).
// All of it runs on the loop's thread, except the store's completion, which
// hands the round back through IoThread::PostCompletion.
#pragma once

#include <cstdint>
#include <vector>

#include "kvcg/results.h"

namespace kvcg::server {

class Connection;

struct SharedRound {
  struct Member {
    Connection* conn;
    uint32_t begin, end;  // its ops in the batch: [begin, end)
    bool early;           // finished from the early answers
  };
  std::vector<Member> members;
  Results results;         // the batch's, once it completed
  uint32_t holds = 0;      // members still to finish + 1 for the completion's delivery
  uint64_t submit_ns = 0;  // for the store-latency histogram
};

}  // namespace kvcg::server
