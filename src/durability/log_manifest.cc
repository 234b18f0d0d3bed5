// LogManifest (log_manifest.h).
#include "durability/log_manifest.h"

#include <fstream>
#include <sstream>

#include "durability/frame_file.h"

namespace kvcg::durability {

namespace {
// "<name>.<seq>.base.kvcg" -> seq; 0 when the name does not have that shape.
uint64_t SeqOf(const std::string& file) {
  size_t end = file.rfind('.');  // before "kvcg"
  if (end == std::string::npos || end == 0) return 0;
  end = file.rfind('.', end - 1);  // before "base"/"incr"
  if (end == std::string::npos || end == 0) return 0;
  const size_t begin = file.rfind('.', end - 1);
  if (begin == std::string::npos) return 0;
  const std::string digits = file.substr(begin + 1, end - begin - 1);
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) return 0;
  return std::stoull(digits);
}
}  // namespace

Status LogManifest::Read(const std::string& path, LogManifest* out) {
  *out = LogManifest{};
  std::ifstream in(path);
  if (!in) return IoError(path, "cannot be read");
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string kind, file, rest;
    words >> kind >> file;
    if (file.empty() || (words >> rest) || file.find('/') != std::string::npos ||
        (kind != "base" && kind != "incr") || (kind == "base" && !out->base.empty())) {
      return IoError(path, "malformed line " + std::to_string(number) + ": \"" + line + "\"");
    }
    if (kind == "base") out->base = file;
    else out->incrs.push_back(file);
  }
  if (in.bad()) return IoError(path, "read error");
  return Status::Ok();
}

Status LogManifest::Write(const std::string& path) const {
  std::string text = "# kvcg append-only log manifest: replay the base, then each incr in order (docs/PERSISTENCE.md)\n";
  if (!base.empty()) text += "base " + base + "\n";
  for (const std::string& f : incrs) text += "incr " + f + "\n";
  return ReplaceFile(path, text);
}

std::string LogManifest::BaseName(const std::string& log_name, uint64_t seq) {
  return log_name + "." + std::to_string(seq) + ".base.kvcg";
}
std::string LogManifest::IncrName(const std::string& log_name, uint64_t seq) {
  return log_name + "." + std::to_string(seq) + ".incr.kvcg";
}

uint64_t LogManifest::MaxSeq() const {
  uint64_t m = SeqOf(base);
  for (const std::string& f : incrs) m = std::max(m, SeqOf(f));
  return m;
}

}  // namespace kvcg::durability
