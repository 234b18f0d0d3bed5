// How kvcg-ycsb writes its results: one JSON object per line (JSON Lines),
// appended to a file or written to stdout, and a CSV summary row per
// measured point (the header is written when the file is new or empty).
//
// Json is a minimal ordered object builder: fields appear in insertion
// order; non-finite numbers become null; strings are escaped per RFC 8259.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvcg::eval {

class Json {
 public:
  Json& Num(const std::string& key, double value);
  Json& Int(const std::string& key, uint64_t value);
  Json& Str(const std::string& key, const std::string& value);
  Json& Bool(const std::string& key, bool value);
  Json& Obj(const std::string& key, const Json& value);
  Json& Raw(const std::string& key, const std::string& json);  // `json` must be valid JSON
  std::string str() const { return "{" + body_ + "}"; }

  static std::string Quote(const std::string& s);
  static std::string Number(double v);

 private:
  void Key(const std::string& key);
  std::string body_;
};

// Appends `line` and a newline to `path` ("" or "-" = stdout). Returns false
// (with a message on stderr) when the file cannot be written.
bool AppendLine(const std::string& path, const std::string& line);

// Appends one CSV row; writes `header` first when the file is new or empty.
bool AppendCsvRow(const std::string& path, const std::vector<std::string>& header,
                  const std::vector<std::string>& row);

}  // namespace kvcg::eval
