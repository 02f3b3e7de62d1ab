#include "operator/duration.h"

#include <gtest/gtest.h>

namespace valley {
namespace {
using namespace std::chrono_literals;

TEST(Duration, ParsesGoStyleDurations) {
  EXPECT_EQ(parse_duration("15s"), 15s);
  EXPECT_EQ(parse_duration("500ms"), 500ms);
  EXPECT_EQ(parse_duration("1h30m"), 90min);
  EXPECT_EQ(parse_duration("2.5h"), 150min);
  EXPECT_EQ(parse_duration("2d"), 48h);
  // A hundred years at most: added to a time of this century, nanoseconds since 1970 must not overflow.
  EXPECT_EQ(parse_duration("36500d"), std::chrono::milliseconds(kMaxDuration));
  EXPECT_FALSE(parse_duration("36501d"));
  EXPECT_FALSE(parse_duration("100000d"));
  EXPECT_EQ(parse_duration("0s"), 0ms);
}

TEST(Duration, RejectsWhatGoRejects) {
  for (const char* bad : {"", "10", "-5s", "5 s", "s", "1.2.3s", "5x", "1h30", ".s", "1e9999h"})
    EXPECT_FALSE(parse_duration(bad).has_value()) << bad;
}

TEST(Duration, FormatsCompactly) {
  EXPECT_EQ(format_duration(90min), "1h30m");
  EXPECT_EQ(format_duration(15s), "15s");
  EXPECT_EQ(format_duration(250ms), "250ms");
  EXPECT_EQ(format_duration(1500ms), "1.5s");
  EXPECT_EQ(format_duration(0ms), "0s");
}

}  // namespace
}  // namespace valley
