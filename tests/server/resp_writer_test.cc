// Unit tests of the RESP2/RESP3 reply encoder.
#include "server/resp_writer.h"

#include <gtest/gtest.h>

#include <string>

namespace kvcg::server {
namespace {

TEST(RespWriter, Resp2) {
  std::string out;
  RespWriter w(&out, false);
  w.SimpleString("OK");
  w.Error("ERR bad\r\nthing");
  w.Integer(-42);
  w.Bulk(std::string("a\0b", 3));
  w.Null();
  w.NullArray();
  w.MapHeader(2);
  w.SetHeader(3);
  w.Bool(true);
  w.Double(1.5);
  w.Verbatim("hi");
  EXPECT_EQ(out, "+OK\r\n-ERR bad  thing\r\n:-42\r\n$3\r\n" + std::string("a\0b", 3) +
                     "\r\n$-1\r\n*-1\r\n*4\r\n*3\r\n:1\r\n$3\r\n1.5\r\n$2\r\nhi\r\n");
}

TEST(RespWriter, Resp3) {
  std::string out;
  RespWriter w(&out, true);
  w.Null();
  w.NullArray();
  w.MapHeader(2);
  w.SetHeader(3);
  w.Bool(false);
  w.Double(1.5);
  w.Verbatim("hi");
  w.Integer(INT64_MIN);
  EXPECT_EQ(out, "_\r\n_\r\n%2\r\n~3\r\n#f\r\n,1.5\r\n=6\r\ntxt:hi\r\n:-9223372036854775808\r\n");
}

TEST(RespWriter, SwitchProtocol) {
  std::string out;
  RespWriter w(&out, false);
  w.Null();
  w.set_resp3(true);
  w.Null();
  EXPECT_EQ(out, "$-1\r\n_\r\n");
}

}  // namespace
}  // namespace kvcg::server
