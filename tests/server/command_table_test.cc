// FindCommand: the case-insensitive lookup every command a client sends
// goes through.
#include "server/command_table.h"

#include <gtest/gtest.h>

#include <cctype>
#include <string>

namespace kvcg::server {
namespace {

TEST(CommandTable, EveryCommandIsFoundByItsNameInAnyCase) {
  ASSERT_GT(Commands().size(), 50u);
  for (const CommandSpec& c : Commands()) {
    std::string upper(c.name), mixed(c.name);
    for (size_t i = 0; i < upper.size(); ++i) {
      upper[i] = char(std::toupper(static_cast<unsigned char>(upper[i])));
      if (i % 2 == 0) mixed[i] = upper[i];
    }
    EXPECT_EQ(FindCommand(c.name), &c) << c.name;
    EXPECT_EQ(FindCommand(upper), &c) << upper;
    EXPECT_EQ(FindCommand(mixed), &c) << mixed;
  }
}

TEST(CommandTable, NamesThatAreNotCommandsAreNotFound) {
  EXPECT_NE(FindCommand("get"), nullptr);
  EXPECT_EQ(FindCommand(""), nullptr);
  EXPECT_EQ(FindCommand("ge"), nullptr);           // a prefix
  EXPECT_EQ(FindCommand("gett"), nullptr);         // an extension
  EXPECT_EQ(FindCommand(std::string("get\0", 4)), nullptr);  // an embedded NUL
  EXPECT_EQ(FindCommand("g\xc5t"), nullptr);       // not ASCII
  EXPECT_EQ(FindCommand("nosuchcommand"), nullptr);
  EXPECT_EQ(FindCommand(std::string(4096, 'g')), nullptr);
}

}  // namespace
}  // namespace kvcg::server
