// HotAnswers (engine/hot_answers.h): the rebuild paths.
#include "engine/hot_answers.h"

#include <algorithm>

namespace kvcg::engine {

void HotAnswers::List::WriteTo(ResultsBuilder* out) const {
  for (const Entry& e : answers) {
    out->SetView(e.index, e.code, Value(e));
    if (e.expire_at != kNoExpiry) out->SetExpire(e.index, e.expire_at);
  }
}

Results HotAnswers::Merge(size_t n, Results* canonical) const {
  ResultsBuilder out;
  out.Reset(n);
  if (canonical != nullptr && !canonical->empty()) {
    for (size_t i = 0; i < n; ++i) out.SetView(i, (*canonical)[i]);
    out.Keep(std::move(*canonical));
  }
  own_.WriteTo(&out);
  late_.WriteTo(&out);
  return out.Finish();
}

Results HotAnswers::Peek(size_t n, uint8_t* answered) const {
  std::fill(answered, answered + n, uint8_t(0));
  for (const Entry& e : own_.answers) answered[e.index] = 1;
  ResultsBuilder out;
  out.Reset(n);
  own_.WriteTo(&out);
  return out.Finish();
}

}  // namespace kvcg::engine
