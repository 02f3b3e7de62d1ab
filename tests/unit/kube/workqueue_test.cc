#include "operator/kube/workqueue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

namespace valley::kube {
namespace {
using namespace std::chrono_literals;

TEST(WorkQueue, DeduplicatesKeysWaitingToBeProcessed) {
  WorkQueue q;
  q.add("a");
  q.add("b");
  q.add("a");
  EXPECT_EQ(q.length(), 2u);
  EXPECT_EQ(q.get(), "a");
  EXPECT_EQ(q.get(), "b");
}

TEST(WorkQueue, AKeyAddedWhileProcessingComesBackOnlyAfterDone) {
  WorkQueue q;
  q.add("a");
  auto k = q.get();
  ASSERT_EQ(k, "a");
  q.add("a");
  q.add("a");
  EXPECT_EQ(q.length(), 0u);  // not handed to a second worker
  q.done("a");
  EXPECT_EQ(q.length(), 1u);
  EXPECT_EQ(q.get(), "a");
  q.done("a");
  EXPECT_EQ(q.length(), 0u);
}

TEST(WorkQueue, DelayedKeysArriveAfterTheirDelayAndEarliestWins) {
  WorkQueue q;
  auto start = Clock::now();
  q.add_after("late", 10s);
  q.add_after("late", 50ms);  // an earlier request for the same key replaces the later one
  EXPECT_EQ(q.length(), 0u);
  EXPECT_EQ(q.delayed(), 1u);
  EXPECT_EQ(q.get(), "late");
  EXPECT_GE(Clock::now() - start, 50ms);
}

TEST(WorkQueue, DelayedKeysComeOutInDueOrderAndANewEarliestWakesASleepingWorker) {
  WorkQueue q;
  q.add_after("third", 150ms);
  q.add_after("first", 30ms);
  q.add_after("second", 90ms);
  q.add_after("third", 10s);  // a later request for a waiting key changes nothing
  EXPECT_EQ(q.delayed(), 3u);
  EXPECT_EQ(q.get(), "first");
  EXPECT_EQ(q.get(), "second");
  EXPECT_EQ(q.get(), "third");
  EXPECT_EQ(q.delayed(), 0u);

  // A worker asleep until a key due in an hour takes one added later but due sooner.
  q.add_after("hour", 1h);
  std::optional<std::string> taken;
  std::thread worker([&] { taken = q.get(); });
  std::this_thread::sleep_for(20ms);  // (if not asleep yet, it finds the key due anyway)
  const auto start = Clock::now();
  q.add_after("soon", 20ms);
  worker.join();
  EXPECT_EQ(taken, "soon");
  EXPECT_LT(Clock::now() - start, 1h);
  EXPECT_EQ(q.delayed(), 1u);
}

TEST(WorkQueue, AddMakesADelayedKeyDueNow) {
  WorkQueue q;
  q.add_after("k", 1h);
  q.add("k");
  EXPECT_EQ(q.delayed(), 0u);
  EXPECT_EQ(q.get(), "k");
}

TEST(WorkQueue, RateLimitedAddsBackOffPerKeyAndForgetResets) {
  WorkQueueOptions opt;
  opt.backoff_base = 1ms;
  opt.qps = 0;  // isolate the per-key backoff
  WorkQueue q(opt);
  for (int i = 0; i < 5; ++i) {
    q.add_rate_limited("k");
    EXPECT_EQ(q.get(), "k");
    q.done("k");
  }
  EXPECT_EQ(q.failures("k"), 5);
  q.forget("k");
  EXPECT_EQ(q.failures("k"), 0);
}

TEST(WorkQueue, ShutDownWakesEveryWaitingWorker) {
  WorkQueue q;
  std::atomic<int> ended{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; ++i) ts.emplace_back([&] {
      EXPECT_FALSE(q.get().has_value());
      ++ended;
    });
  std::this_thread::sleep_for(20ms);
  q.shut_down();
  for (auto& t : ts) t.join();
  EXPECT_EQ(ended.load(), 4);
  q.add("after");
  EXPECT_FALSE(q.get().has_value());
}

TEST(WorkQueue, WorkersNeverProcessOneKeyConcurrentlyAndFailuresRetry) {
  WorkQueueOptions opt;
  opt.backoff_base = 1ms;
  opt.backoff_cap = 5ms;
  WorkQueue q(opt);
  std::mutex mu;
  std::map<std::string, int> in_flight, processed;
  std::atomic<bool> overlap{false};
  std::atomic<int> failures_left{20};
  auto threads = run_workers(q, 4, [&](const std::string& key) {
    {
      std::lock_guard lock(mu);
      if (++in_flight[key] > 1) overlap = true;
    }
    std::this_thread::sleep_for(1ms);
    {
      std::lock_guard lock(mu);
      --in_flight[key];
      ++processed[key];
    }
    if (failures_left.fetch_sub(1) > 0) throw std::runtime_error("transient");
    return true;
  });
  for (int round = 0; round < 50; ++round)
    for (int k = 0; k < 5; ++k) q.add("key-" + std::to_string(k));
  bool drained = false;
  for (int i = 0; i < 500 && !drained; ++i) {
    std::this_thread::sleep_for(10ms);
    drained = q.length() == 0 && q.delayed() == 0 && failures_left.load() < 0;
  }
  q.shut_down();
  for (auto& t : threads) t.join();
  EXPECT_TRUE(drained);
  EXPECT_FALSE(overlap.load());
  for (int k = 0; k < 5; ++k) EXPECT_GE(processed["key-" + std::to_string(k)], 1);
}

}  // namespace
}  // namespace valley::kube
