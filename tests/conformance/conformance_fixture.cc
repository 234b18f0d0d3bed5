// Fixture and helpers of the conformance suite, and its single instantiation
// over the rows of backend_params.h (every TEST_P in this binary runs per row).
#include "conformance_fixture.h"

#include <cstring>

#include "kvcg/engine.h"

namespace kvcg {

void PrintTo(Code code, std::ostream* os) { *os << CodeName(code); }

void PrintTo(const OpResultView& result, std::ostream* os) {
  *os << "{" << CodeName(result.code) << ", \"" << conformance::Show(result.value) << "\"}";
}

void PrintTo(const OpResult& result, std::ostream* os) { PrintTo(conformance::View(result), os); }

}  // namespace kvcg

namespace kvcg::conformance {

std::string Show(std::string_view bytes, size_t max) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (bytes.size() > max) out += "...(" + std::to_string(bytes.size()) + " bytes)";
  return out;
}

namespace {
// Where two byte strings first differ, for messages about large values.
std::string Diff(std::string_view got, std::string_view want) {
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  return "got " + std::to_string(got.size()) + " bytes \"" + Show(got) + "\", want " +
         std::to_string(want.size()) + " bytes \"" + Show(want) + "\" (first difference at byte " +
         std::to_string(i) + ")";
}
}  // namespace

::testing::AssertionResult Found(const OpResultView& r, std::string_view value) {
  if (r.code != Code::kOk) {
    return ::testing::AssertionFailure()
           << "code " << CodeName(r.code) << ", want ok with \"" << Show(value) << "\"";
  }
  if (r.value != value) return ::testing::AssertionFailure() << "ok but " << Diff(r.value, value);
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult NotFound(const OpResultView& r) {
  if (r.code != Code::kNotFound) {
    return ::testing::AssertionFailure()
           << "code " << CodeName(r.code) << " value \"" << Show(r.value) << "\", want not_found";
  }
  if (!r.value.empty()) {
    return ::testing::AssertionFailure() << "not_found with a non-empty value \"" << Show(r.value) << "\"";
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult Failed(const OpResultView& r, Code code) {
  if (r.code != code) {
    return ::testing::AssertionFailure()
           << "code " << CodeName(r.code) << ", want " << CodeName(code);
  }
  if (!r.value.empty()) {
    return ::testing::AssertionFailure() << "error result with a non-empty value \"" << Show(r.value) << "\"";
  }
  return ::testing::AssertionSuccess();
}

std::string RandomBytes(size_t size, uint64_t seed) {
  std::string out(size, '\0');
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  size_t i = 0;
  while (i < size) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const size_t n = size - i < 8 ? size - i : 8;
    std::memcpy(out.data() + i, &x, n);
    i += n;
  }
  return out;
}

void Conformance::SetUp() {
  const BackendParam& row = GetParam();
  config_ = row.make_config();
  std::string why;
  if (!row.available(config_, &why)) GTEST_SKIP() << why;
  ASSERT_NO_FATAL_FAILURE(Reopen(nullptr));
}

void Conformance::TearDown() {
  // Engine rows: record how often the model switched during the test, so a
  // report shows the switch protocol really ran under the suite.
  if (Engine* engine = AsEngine(store_.get())) {
    const EngineStats stats = engine->Stats();
    RecordProperty("model_switches", std::to_string(stats.switches));
    RecordProperty("hot_ops", std::to_string(stats.hot.ops));
  }
  store_.reset();
}

void Conformance::Reopen(const std::function<void(Config&)>& tweak) {
  store_.reset();
  Config config = GetParam().make_config();
  if (tweak) tweak(config);
  config_ = config;
  const Status s = GetParam().open(config, &store_);
  ASSERT_TRUE(s.ok()) << GetParam().name << ": Store::Open: " << s.ToString();
  ASSERT_NE(store_, nullptr);
}

void PrintTo(const BackendParam& row, std::ostream* os) { *os << row.name; }

namespace {
// 8 bytes, little-endian `n` under a tag byte, so keys and values of the
// fixed8 layout never coincide and include NUL bytes.
std::string Fixed8(uint64_t n, unsigned char tag) {
  std::string out(8, '\0');
  const uint64_t word = (n & 0x00FFFFFFFFFFFFFFull) | (uint64_t{tag} << 56);
  std::memcpy(out.data(), &word, 8);
  return out;
}
}  // namespace

std::string Conformance::K(uint64_t i) const {
  if (fixed8()) return Fixed8(i, 'K');
  return "key:" + std::to_string(i);
}

std::string Conformance::V(uint64_t i, size_t general_size) const {
  if (fixed8()) return Fixed8(i, 'V');
  // "v<i>:" then filler derived from i, cut or padded to exactly general_size.
  std::string out = "v" + std::to_string(i) + ":";
  out += RandomBytes(general_size > out.size() ? general_size - out.size() : 0, i);
  out.resize(general_size);
  return out;
}

Results Conformance::Run(Batch batch) {
  const size_t n = batch.size();
  Results results = store_->Execute(std::move(batch));
  EXPECT_EQ(results.size(), n) << "one result per operation";
  if (results.size() == n) return results;
  // Pad (or cut) to n: views into the store's Results, which the new one keeps.
  ResultsBuilder padded;
  padded.Reset(n);
  for (size_t i = 0; i < n; ++i) {
    if (i < results.size()) padded.SetView(i, results.code(i), results.value(i));
    else padded.SetCode(i, Code::kInternal);
  }
  padded.Keep(std::move(results));
  return padded.Finish();
}

OpResult Conformance::Cas(std::string_view key, const std::string_view* expected,
                          std::string_view desired) {
  Batch batch = NewBatch();
  batch.CompareAndSwap(key, expected, desired);
  return Run(std::move(batch))[0].ToOwned();
}

INSTANTIATE_TEST_SUITE_P(Backends, Conformance, ::testing::ValuesIn(BackendParams()),
                         [](const ::testing::TestParamInfo<BackendParam>& info) {
                           std::string name = info.param.name;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace kvcg::conformance
