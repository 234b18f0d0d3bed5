// Redis-style glob matching (stringmatchlen): * ? [abc] [^a-z] and \ escapes.
// Used by KEYS, CONFIG GET and COMMAND LIST FILTERBY PATTERN patterns.
#pragma once

#include <string_view>

namespace kvcg::server {

bool GlobMatch(std::string_view pattern, std::string_view text, bool nocase);

}  // namespace kvcg::server
