// RespWriter: encodes replies in RESP2 or RESP3 into a byte string.
//
// One writer per reply, bound to the protocol the client had negotiated
// (HELLO) when its command was dispatched, so a pipeline "GET; HELLO 3; GET"
// gets a RESP2 reply and then RESP3 replies, as in Redis. RESP3-only types
// degrade the way Redis degrades them for RESP2 clients: null -> $-1 (or *-1
// for arrays), map -> flat array, set -> array, double -> bulk string,
// boolean -> integer, verbatim -> bulk string.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kvcg::server {

class RespWriter {
 public:
  RespWriter(std::string* out, bool resp3) : out_(out), resp3_(resp3) {}

  bool resp3() const { return resp3_; }
  // HELLO switches protocol and answers in the new one.
  void set_resp3(bool resp3) { resp3_ = resp3; }

  void SimpleString(std::string_view s);  // +OK
  // "-<msg>": msg must start with an error code such as "ERR " or "WRONGTYPE ".
  // Newlines are replaced with spaces so the reply stays one line.
  void Error(std::string_view msg);
  void Integer(int64_t v);
  void Bulk(std::string_view s);
  void Null();        // a missing bulk string / value
  void NullArray();   // a missing array (*-1 in RESP2)
  void ArrayHeader(size_t n);
  void MapHeader(size_t pairs);
  void SetHeader(size_t n);
  void Double(double v);
  void Bool(bool v);
  // Verbatim text ("=" in RESP3 with a 3-letter format, bulk in RESP2).
  void Verbatim(std::string_view text, std::string_view format = "txt");

  // Canned replies.
  void Ok() { Raw("+OK\r\n"); }
  void Raw(std::string_view bytes) { out_->append(bytes); }

 private:
  void Header(char type, uint64_t n);
  std::string* out_;
  bool resp3_;
};

}  // namespace kvcg::server
