// HistoryRecorder: per-client buffers, one logical clock, merge at the end.
#include "history_recorder.h"

#include <utility>

namespace kvcg::lincheck {

HistoryRecorder::Client* HistoryRecorder::NewClient() {
  std::lock_guard<std::mutex> lock(mu_);
  clients_.push_back(std::unique_ptr<Client>(new Client(this, static_cast<uint32_t>(clients_.size()))));
  return clients_.back().get();
}

std::vector<Event> HistoryRecorder::History() const {
  std::vector<Event> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& client : clients_) {
    std::lock_guard<std::mutex> client_lock(client->mu_);
    out.insert(out.end(), client->events_.begin(), client->events_.end());
  }
  return out;
}

std::vector<Event> HistoryRecorder::Client::Describe(const Batch& batch, uint64_t invoke) {
  const uint64_t submit = ++submits_;
  const uint64_t number = recorder_->batches_.fetch_add(1, std::memory_order_relaxed) + 1;
  std::vector<Event> events(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    Event& e = events[i];
    e.key = std::string(batch.key(i));
    e.type = batch.type(i);
    if (e.type == OpType::kPut || e.type == OpType::kCompareAndSwap) e.value = std::string(batch.value(i));
    if (e.type == OpType::kCompareAndSwap) {
      e.expect_absent = batch.expect_absent(i);
      if (!e.expect_absent) e.expected = std::string(batch.expected(i));
    }
    e.invoke = invoke;
    e.order_group = uint64_t{id_} + 1;
    e.order_seq = (submit << 24) + i;
    e.client = id_;
    e.batch = number;
    e.batch_index = static_cast<uint32_t>(i);
  }
  return events;
}

void HistoryRecorder::Client::Complete(std::vector<Event>&& events, const Results& results) {
  const uint64_t response = recorder_->Tick();
  for (size_t i = 0; i < events.size(); ++i) {
    Event& e = events[i];
    e.response = response;
    if (i < results.size()) {
      e.code = results.code(i);
      e.output.assign(results.value(i));  // a copy: the history outlives the Results
    } else {
      // A store that answers with too few results broke its contract; record
      // the op as failed so the checker ignores it, and let callers assert on
      // the result count.
      e.code = Code::kInternal;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (Event& e : events) events_.push_back(std::move(e));
}

Results HistoryRecorder::Client::Execute(Store* store, const Batch& batch) {
  std::vector<Event> events = Describe(batch, recorder_->Tick());
  Results results = store->Execute(batch);
  Complete(std::move(events), results);
  return results;
}

void HistoryRecorder::Client::Submit(Store* store, Batch batch, Store::Completion done) {
  std::vector<Event> events = Describe(batch, recorder_->Tick());
  store->Submit(std::move(batch), [this, events = std::move(events), done = std::move(done)](
                                      Results&& results) mutable {
    Complete(std::move(events), results);
    if (done) done(std::move(results));
  });
}

void HistoryRecorder::Client::Record(const Batch& batch, const Results& results, uint64_t invoke) {
  Complete(Describe(batch, invoke), results);
}

}  // namespace kvcg::lincheck
