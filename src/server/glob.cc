// Glob matching; see glob.h. Recursive on '*' with a depth bound so a hostile
// pattern cannot exhaust the stack, and — as Redis 7.0's stringmatchlen —
// once the rest of the pattern after a '*' matched nowhere in the rest of the
// text, no earlier '*' is retried on a longer stretch (it could only start
// the rest later, which already failed): "a*a*a*...*b" against "aaa...a" is
// linear instead of exponential (KEYS's "long nested loops" regression test).
#include "server/glob.h"

#include <cctype>
#include <utility>

namespace kvcg::server {

namespace {

char Fold(char c, bool nocase) {
  return nocase ? static_cast<char>(std::tolower(static_cast<unsigned char>(c))) : c;
}

bool Match(const char* p, const char* pe, const char* s, const char* se, bool nocase, int depth, bool* skip_longer) {
  if (depth > 1000) return false;
  while (p < pe && s < se) {
    switch (*p) {
      case '*':
        while (p + 1 < pe && p[1] == '*') ++p;
        if (p + 1 == pe) return true;
        for (const char* t = s; t < se; ++t) {
          if (Match(p + 1, pe, t, se, nocase, depth + 1, skip_longer)) return true;
          if (*skip_longer) return false;
        }
        *skip_longer = true;
        return false;
      case '?':
        ++s;
        break;
      case '[': {
        ++p;
        bool negate = p < pe && *p == '^';
        if (negate) ++p;
        bool hit = false;
        while (p < pe && *p != ']') {
          if (*p == '\\' && p + 1 < pe) {
            ++p;
            if (Fold(*p, nocase) == Fold(*s, nocase)) hit = true;
          } else if (p + 2 < pe && p[1] == '-') {
            char lo = Fold(p[0], nocase), hi = Fold(p[2], nocase), c = Fold(*s, nocase);
            if (lo > hi) std::swap(lo, hi);
            if (c >= lo && c <= hi) hit = true;
            p += 2;
          } else if (Fold(*p, nocase) == Fold(*s, nocase)) {
            hit = true;
          }
          ++p;
        }
        if (negate) hit = !hit;
        if (!hit) return false;
        ++s;
        break;
      }
      case '\\':
        if (p + 1 < pe) ++p;
        [[fallthrough]];
      default:
        if (Fold(*p, nocase) != Fold(*s, nocase)) return false;
        ++s;
        break;
    }
    if (p < pe) ++p;
  }
  while (p < pe && *p == '*') ++p;
  return p == pe && s == se;
}

}  // namespace

bool GlobMatch(std::string_view pattern, std::string_view text, bool nocase) {
  bool skip_longer = false;
  return Match(pattern.data(), pattern.data() + pattern.size(), text.data(), text.data() + text.size(),
               nocase, 0, &skip_longer);
}

}  // namespace kvcg::server
