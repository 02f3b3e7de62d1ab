#include "operator/kube/rate_limit.h"

#include <gtest/gtest.h>

namespace valley::kube {
namespace {
using namespace std::chrono_literals;

TEST(TokenBucket, BurstIsFreeThenCallersAreSpacedAtQps) {
  TokenBucket bucket(10, 3);
  auto t0 = Clock::time_point{} + 1h;
  EXPECT_EQ(bucket.reserve(t0), Clock::duration::zero());
  EXPECT_EQ(bucket.reserve(t0), Clock::duration::zero());
  EXPECT_EQ(bucket.reserve(t0), Clock::duration::zero());
  // The fourth and fifth wait 100 ms and 200 ms: reservations queue up.
  EXPECT_NEAR(std::chrono::duration<double>(bucket.reserve(t0)).count(), 0.1, 1e-6);
  EXPECT_NEAR(std::chrono::duration<double>(bucket.reserve(t0)).count(), 0.2, 1e-6);
}

TEST(TokenBucket, RefillsOverTimeUpToBurst) {
  TokenBucket bucket(2, 2);
  auto t0 = Clock::time_point{} + 1h;
  bucket.reserve(t0);
  bucket.reserve(t0);
  EXPECT_GT(bucket.reserve(t0), Clock::duration::zero());  // in debt by one
  // After 10 s the bucket is full again (capped at burst), not 20 tokens.
  auto t1 = t0 + 10s;
  EXPECT_EQ(bucket.reserve(t1), Clock::duration::zero());
  EXPECT_EQ(bucket.reserve(t1), Clock::duration::zero());
  EXPECT_GT(bucket.reserve(t1), Clock::duration::zero());
}

TEST(TokenBucket, ZeroQpsIsUnlimited) {
  TokenBucket bucket(0, 1);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(bucket.reserve(Clock::now()), Clock::duration::zero());
}

TEST(ItemBackoff, DoublesPerFailureUpToCapAndForgets) {
  ItemBackoff b(5ms, 1s);
  EXPECT_EQ(b.next("a"), 5ms);
  EXPECT_EQ(b.next("a"), 10ms);
  EXPECT_EQ(b.next("a"), 20ms);
  EXPECT_EQ(b.next("b"), 5ms);  // keys are independent
  for (int i = 0; i < 100; ++i) b.next("a");
  EXPECT_EQ(b.next("a"), 1s);
  EXPECT_EQ(b.failures("a"), 104);
  b.forget("a");
  EXPECT_EQ(b.failures("a"), 0);
  EXPECT_EQ(b.next("a"), 5ms);
}

}  // namespace
}  // namespace valley::kube
