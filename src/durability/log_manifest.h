// LogManifest: which files make up the append-only log, in replay order —
// at most one base (a snapshot-format file: the state at the last rewrite)
// and the incremental logs written since, oldest first (Redis 7's
// multi-part AOF, with the same idea and file roles).
//
// On disk: <log_dir>/<log_name>.manifest, a text file of lines
// "base <file>" / "incr <file>" (names relative to log_dir), '#' comments.
// It is replaced atomically (frame_file.h ReplaceFile), so after a crash it
// names either the old set of files or the new one, both complete.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvcg/status.h"

namespace kvcg::durability {

struct LogManifest {
  std::string base;               // "" = none (the log starts from an empty store)
  std::vector<std::string> incrs; // oldest first; the last one is being appended to

  // Reads `path`. kIoError naming the file for unreadable or malformed content.
  static Status Read(const std::string& path, LogManifest* out);
  Status Write(const std::string& path) const;

  // File names for sequence number `seq`.
  static std::string BaseName(const std::string& log_name, uint64_t seq);
  static std::string IncrName(const std::string& log_name, uint64_t seq);
  // The largest sequence number among the listed files (0 if none).
  uint64_t MaxSeq() const;
};

}  // namespace kvcg::durability
