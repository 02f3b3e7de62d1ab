#include "operator/kube/timefmt.h"

#include <gtest/gtest.h>

namespace valley::kube {
namespace {
using namespace std::chrono;

TEST(TimeFormat, FormatsUtcAtSecondAndMicrosecondPrecision) {
  SystemTime t = SystemTime(seconds(1795316645)) + microseconds(123456);  // 2026-11-22T03:04:05Z
  EXPECT_EQ(format_time(t), "2026-11-22T03:04:05Z");
  EXPECT_EQ(format_micro_time(t), "2026-11-22T03:04:05.123456Z");
}

TEST(TimeFormat, ParsesWhatItFormatsAndOffsets) {
  SystemTime t = SystemTime(seconds(1795316645)) + microseconds(123456);
  EXPECT_EQ(parse_time(format_micro_time(t)), t);
  EXPECT_EQ(parse_time("2026-11-22T03:04:05Z"), SystemTime(seconds(1795316645)));
  EXPECT_EQ(parse_time("2026-11-22T11:04:05+08:00"), SystemTime(seconds(1795316645)));
  EXPECT_EQ(parse_time("1970-01-01T00:00:00Z"), SystemTime(seconds(0)));
  EXPECT_EQ(parse_time("2024-02-29T00:00:00Z"), SystemTime(seconds(1709164800)));  // leap day
}

TEST(TimeFormat, RejectsMalformedText) {
  for (const char* bad : {"", "2026-11-22", "2026-11-22T03:04:05", "2026-13-01T00:00:00Z", "2026-11-22T03:04:05.Z",
                          "2026-11-22T03:04:05Zjunk", "2026/11/22T03:04:05Z", "2026-11-22T03:04:05+0800",
                          // beyond the nanosecond clock's span (fuzzing found the overflow)
                          "1013-11-22T06:01:02Z", "9999-12-31T23:59:59Z", "0000-01-01T00:00:00Z"})
    EXPECT_FALSE(parse_time(bad).has_value()) << bad;
}

}  // namespace
}  // namespace valley::kube
