#include "operator/kube/retry.h"

#include <gtest/gtest.h>

namespace valley::kube {
namespace {
using namespace std::chrono_literals;

TEST(Retry, TooManyRequestsIsRetriedForEveryVerbHonouringRetryAfter) {
  RetryPolicy p;
  EXPECT_EQ(retry_delay(p, 0, "POST", Transport::Answered, 429, "3"), 3s);
  EXPECT_EQ(retry_delay(p, 0, "GET", Transport::Answered, 429, ""), 200ms);
  EXPECT_EQ(retry_delay(p, 0, "DELETE", Transport::Answered, 429, "120"), p.cap);  // capped
}

TEST(Retry, ServerErrorsRetryReadsAlwaysWritesOnlyWithRetryAfter) {
  RetryPolicy p;
  EXPECT_TRUE(retry_delay(p, 0, "GET", Transport::Answered, 503, ""));
  EXPECT_TRUE(retry_delay(p, 0, "GET", Transport::Answered, 500, ""));
  EXPECT_FALSE(retry_delay(p, 0, "POST", Transport::Answered, 500, ""));
  EXPECT_FALSE(retry_delay(p, 0, "PUT", Transport::Answered, 504, ""));
  EXPECT_EQ(retry_delay(p, 0, "PUT", Transport::Answered, 503, "1"), 1s);
}

TEST(Retry, ClientErrorsAreNeverRetried) {
  RetryPolicy p;
  for (long status : {200L, 201L, 400L, 401L, 403L, 404L, 409L, 410L, 422L})
    EXPECT_FALSE(retry_delay(p, 0, "GET", Transport::Answered, status, "1")) << status;
}

TEST(Retry, NoAnswerRetriesWhenNothingWasSentOrTheRequestWasARead) {
  RetryPolicy p;
  EXPECT_TRUE(retry_delay(p, 0, "POST", Transport::NotConnected, 0, ""));
  EXPECT_TRUE(retry_delay(p, 0, "GET", Transport::Failed, 0, ""));
  EXPECT_FALSE(retry_delay(p, 0, "POST", Transport::Failed, 0, ""));
}

TEST(Retry, BackoffDoublesAndStopsAfterMaxRetries) {
  RetryPolicy p;
  p.max_retries = 4;
  EXPECT_EQ(retry_delay(p, 0, "GET", Transport::Answered, 503, ""), 200ms);
  EXPECT_EQ(retry_delay(p, 1, "GET", Transport::Answered, 503, ""), 400ms);
  EXPECT_EQ(retry_delay(p, 3, "GET", Transport::Answered, 503, ""), 1600ms);
  EXPECT_FALSE(retry_delay(p, 4, "GET", Transport::Answered, 503, ""));
}

TEST(Retry, RetryAfterParsing) {
  EXPECT_EQ(parse_retry_after("5"), 5s);
  EXPECT_FALSE(parse_retry_after(""));
  EXPECT_FALSE(parse_retry_after("-1"));
  EXPECT_FALSE(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"));
  EXPECT_FALSE(parse_retry_after("99999999999"));
}

}  // namespace
}  // namespace valley::kube
