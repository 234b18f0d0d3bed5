// See result_writer.h.
#include "result_writer.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sys/stat.h>

namespace kvcg::eval {

std::string Json::Quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string Json::Number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

void Json::Key(const std::string& key) {
  if (!body_.empty()) body_ += ", ";
  body_ += Quote(key) + ": ";
}

Json& Json::Num(const std::string& key, double value) {
  Key(key);
  body_ += Number(value);
  return *this;
}
Json& Json::Int(const std::string& key, uint64_t value) {
  Key(key);
  body_ += std::to_string(value);
  return *this;
}
Json& Json::Str(const std::string& key, const std::string& value) {
  Key(key);
  body_ += Quote(value);
  return *this;
}
Json& Json::Bool(const std::string& key, bool value) {
  Key(key);
  body_ += value ? "true" : "false";
  return *this;
}
Json& Json::Obj(const std::string& key, const Json& value) {
  Key(key);
  body_ += value.str();
  return *this;
}
Json& Json::Raw(const std::string& key, const std::string& json) {
  Key(key);
  body_ += json;
  return *this;
}

bool AppendLine(const std::string& path, const std::string& line) {
  if (path.empty() || path == "-") {
    std::fputs((line + "\n").c_str(), stdout);
    std::fflush(stdout);
    return true;
  }
  std::ofstream out(path, std::ios::app);
  out << line << '\n';
  if (!out) {
    std::fprintf(stderr, "kvcg-ycsb: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

bool AppendCsvRow(const std::string& path, const std::vector<std::string>& header,
                  const std::vector<std::string>& row) {
  struct stat st {};
  const bool fresh = ::stat(path.c_str(), &st) != 0 || st.st_size == 0;
  auto join = [](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i) line += ',';
      // Cells are numbers and simple names; quote anything with a comma or quote.
      if (cells[i].find_first_of(",\"") != std::string::npos) {
        std::string q = "\"";
        for (char c : cells[i]) q += c == '"' ? std::string("\"\"") : std::string(1, c);
        line += q + "\"";
      } else {
        line += cells[i];
      }
    }
    return line;
  };
  std::string text;
  if (fresh) text += join(header) + "\n";
  text += join(row);
  return AppendLine(path, text);
}

}  // namespace kvcg::eval
