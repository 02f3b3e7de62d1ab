#include "operator/kube/remote_clock.h"

#include <gtest/gtest.h>

namespace valley::kube {
namespace {
using namespace std::chrono;
using Steady = RemoteClock::Steady;

const SystemTime kServer = SystemTime(seconds(1795316645));  // 2026-11-22T03:04:05Z
const Steady kT0 = Steady(hours(100));

TEST(RemoteClock, ParsesHttpDates) {
  EXPECT_EQ(parse_http_date("Sun, 22 Nov 2026 03:04:05 GMT"), kServer);
  EXPECT_EQ(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), SystemTime(seconds(0)));
  EXPECT_EQ(parse_http_date("Thu, 29 Feb 2024 00:00:00 GMT"), SystemTime(seconds(1709164800)));
  for (const char* bad : {"", "Sun, 22 Nov 2026 03:04:05", "Sun, 22 Foo 2026 03:04:05 GMT", "Sun, 22 Nov 2026 25:04:05 GMT",
                          "Sunday, 22-Nov-26 03:04:05 GMT", "Sun, 2x Nov 2026 03:04:05 GMT", "Sun, 00 Nov 2026 03:04:05 GMT"})
    EXPECT_FALSE(parse_http_date(bad).has_value()) << bad;
}

TEST(RemoteClock, FollowsTheServerNotThisHostsWallClock) {
  RemoteClock c;
  EXPECT_FALSE(c.anchored());
  c.observe(kServer, kT0);
  EXPECT_TRUE(c.anchored());
  EXPECT_EQ(c.at(kT0 + seconds(90)), kServer + seconds(90));  // carried by the steady clock
  // A server that is a day away from this host's wall clock is still the clock used.
  RemoteClock far;
  far.observe(SystemTime(seconds(86400)), Steady::clock::now());
  EXPECT_LT(far.now(), SystemTime(seconds(86400 + 60)));
}

TEST(RemoteClock, KeepsTheHighestBoundSoALateAnswerDoesNotMoveItBack) {
  RemoteClock c;
  c.observe(kServer, kT0 + milliseconds(900));  // a Date truncated by 900 ms
  c.observe(kServer + seconds(1), kT0 + milliseconds(1010));  // a tighter bound
  EXPECT_EQ(c.at(kT0 + seconds(2)), kServer + milliseconds(1990));
  c.observe(kServer, kT0 + seconds(4));  // written 3 s before it arrived (a slow network)
  EXPECT_EQ(c.at(kT0 + seconds(2)), kServer + milliseconds(1990));
}

TEST(RemoteClock, FollowsAServerStepBackOnlyWhenAnswersAgree) {
  RemoteClock c;
  c.observe(kServer, kT0);
  const auto back = kServer - minutes(2);  // the server's clock was stepped back two minutes
  for (int i = 1; i < RemoteClock::kStepBackAnswers; ++i) {
    c.observe(back + seconds(i), kT0 + seconds(i));
    EXPECT_EQ(c.at(kT0), kServer) << i;
  }
  c.observe(kServer + seconds(10), kT0 + seconds(10));  // one answer in line resets the count
  for (int i = 1; i < RemoteClock::kStepBackAnswers; ++i) c.observe(back + seconds(10 + i), kT0 + seconds(10 + i));
  EXPECT_EQ(c.at(kT0), kServer);
  c.observe(back + seconds(20), kT0 + seconds(20));
  EXPECT_EQ(c.at(kT0), back);
}

TEST(RemoteClock, ObservesHeaderValuesAndIgnoresJunk) {
  RemoteClock c;
  EXPECT_FALSE(c.observe_http_date("yesterday", kT0));
  EXPECT_FALSE(c.anchored());
  EXPECT_TRUE(c.observe_http_date("Sun, 22 Nov 2026 03:04:05 GMT", kT0));
  EXPECT_EQ(c.at(kT0), kServer);
}

}  // namespace
}  // namespace valley::kube
