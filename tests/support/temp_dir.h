// TempDir: a fresh directory under the system's temp folder for one test,
// removed with everything in it when the object goes.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace kvcg::testing {

class TempDir {
 public:
  // `prefix` names the test in the directory's name (kvcg-<prefix>-XXXXXX).
  explicit TempDir(const std::string& prefix = "test") {
    std::string t = (std::filesystem::temp_directory_path() / ("kvcg-" + prefix + "-XXXXXX")).string();
    path_ = ::mkdtemp(t.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace kvcg::testing
