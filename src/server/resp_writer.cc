// RESP encoding; see resp_writer.h.
#include "server/resp_writer.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace kvcg::server {

void RespWriter::Header(char type, uint64_t n) {
  char buf[24];
  buf[0] = type;
  char* end = std::to_chars(buf + 1, buf + sizeof(buf) - 2, n).ptr;
  *end++ = '\r';
  *end++ = '\n';
  out_->append(buf, static_cast<size_t>(end - buf));
}

void RespWriter::SimpleString(std::string_view s) {
  out_->push_back('+');
  for (char c : s) out_->push_back(c == '\r' || c == '\n' ? ' ' : c);
  out_->append("\r\n");
}

void RespWriter::Error(std::string_view msg) {
  out_->push_back('-');
  for (char c : msg) out_->push_back(c == '\r' || c == '\n' ? ' ' : c);
  out_->append("\r\n");
}

void RespWriter::Integer(int64_t v) {
  char buf[24];
  buf[0] = ':';
  char* end = std::to_chars(buf + 1, buf + sizeof(buf) - 2, v).ptr;
  *end++ = '\r';
  *end++ = '\n';
  out_->append(buf, static_cast<size_t>(end - buf));
}

void RespWriter::Bulk(std::string_view s) {
  Header('$', s.size());
  out_->append(s);
  out_->append("\r\n");
}

void RespWriter::Null() { out_->append(resp3_ ? "_\r\n" : "$-1\r\n"); }
void RespWriter::NullArray() { out_->append(resp3_ ? "_\r\n" : "*-1\r\n"); }
void RespWriter::ArrayHeader(size_t n) { Header('*', n); }
void RespWriter::MapHeader(size_t pairs) {
  if (resp3_) Header('%', pairs);
  else Header('*', pairs * 2);
}
void RespWriter::SetHeader(size_t n) { Header(resp3_ ? '~' : '*', n); }

void RespWriter::Double(double v) {
  char buf[64];
  int n;
  if (std::isinf(v)) n = std::snprintf(buf, sizeof(buf), "%s", v > 0 ? "inf" : "-inf");
  else n = std::snprintf(buf, sizeof(buf), "%.17g", v);
  if (resp3_) {
    out_->push_back(',');
    out_->append(buf, static_cast<size_t>(n));
    out_->append("\r\n");
  } else {
    Bulk({buf, static_cast<size_t>(n)});
  }
}

void RespWriter::Bool(bool v) {
  if (resp3_) out_->append(v ? "#t\r\n" : "#f\r\n");
  else out_->append(v ? ":1\r\n" : ":0\r\n");
}

void RespWriter::Verbatim(std::string_view text, std::string_view format) {
  if (!resp3_) {
    Bulk(text);
    return;
  }
  Header('=', text.size() + 4);
  out_->append(format);
  out_->push_back(':');
  out_->append(text);
  out_->append("\r\n");
}

}  // namespace kvcg::server
