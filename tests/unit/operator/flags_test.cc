#include "operator/flags.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace valley {
namespace {

Flags make() {
  return Flags({{"kubeconfig", "", "path"}, {"log-level", "info", "level"}, {"once", "false", "bool", true}});
}

std::vector<std::string> parse(Flags& f, std::vector<std::string> args) {
  std::vector<char*> argv{const_cast<char*>("prog")};
  for (auto& a : args) argv.push_back(a.data());
  return f.parse(static_cast<int>(argv.size()), argv.data());
}

TEST(Flags, EqualsAndSpaceFormsAndPositionals) {
  Flags f = make();
  auto pos = parse(f, {"--kubeconfig=/a", "version", "--log-level", "debug", "--once"});
  EXPECT_EQ(f.get("kubeconfig"), "/a");
  EXPECT_EQ(f.get("log-level"), "debug");
  EXPECT_TRUE(f.get_bool("once"));
  EXPECT_EQ(pos, std::vector<std::string>{"version"});
}

TEST(Flags, EnvironmentThenDefault) {
  Flags f = make();
  parse(f, {});
  ::setenv("VALLEY_LOG_LEVEL", "warn", 1);
  EXPECT_EQ(f.get("log-level"), "warn");
  ::unsetenv("VALLEY_LOG_LEVEL");
  EXPECT_EQ(f.get("log-level"), "info");
  EXPECT_FALSE(f.get_bool("once"));
}

TEST(Flags, ErrorsAreClear) {
  Flags f = make();
  EXPECT_THROW(parse(f, {"--nope=1"}), std::invalid_argument);
  Flags g = make();
  EXPECT_THROW(parse(g, {"--kubeconfig"}), std::invalid_argument);
  Flags h = make();
  EXPECT_THROW(parse(h, {"--once=yes"}), std::invalid_argument);
}

}  // namespace
}  // namespace valley

namespace valley {
namespace {
TEST(Flags, SplitListDropsBlanksAndSpaces) {
  EXPECT_EQ(split_list(" a, b,,c ,"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(split_list("").empty());
}
}  // namespace
}  // namespace valley
