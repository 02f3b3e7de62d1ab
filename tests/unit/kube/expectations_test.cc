#include "operator/kube/expectations.h"
#include "operator/kube/request_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

namespace valley::kube {
namespace {
using namespace std::chrono_literals;

TEST(CreationExpectations, PendingUntilTheInformerShowsThatIncarnation) {
  CreationExpectations e;
  EXPECT_FALSE(e.pending("Pod ns/a"));
  e.expect("Pod ns/a", "uid-2");
  EXPECT_TRUE(e.pending("Pod ns/a"));
  e.observed("Pod ns/a", "uid-1");  // the pod this one replaces, still being deleted
  EXPECT_TRUE(e.pending("Pod ns/a"));
  e.observed("Pod ns/b", "uid-2");
  EXPECT_TRUE(e.pending("Pod ns/a"));
  e.observed("Pod ns/a", "uid-2");
  EXPECT_FALSE(e.pending("Pod ns/a"));
  EXPECT_EQ(e.size(), 0u);
}

TEST(CreationExpectations, LapseAfterTheirTimeSoALostEventNeverWedgesAnOwner) {
  CreationExpectations e(10s);
  const auto t0 = CreationExpectations::Clock::now();
  e.expect("Pod ns/a", "uid-1", t0);
  EXPECT_TRUE(e.pending("Pod ns/a", t0 + 9s));
  EXPECT_FALSE(e.pending("Pod ns/a", t0 + 10s));
  EXPECT_EQ(e.size(), 0u);
}

TEST(RequestPool, RunsEveryJobOnceAndReturnsWhenAllAreDone) {
  RequestPool pool(4);
  std::atomic<int> sum{0};
  std::vector<int> seen(100, 0);
  pool.run_all(seen.size(), [&](size_t i) {
    ++seen[i];
    sum += static_cast<int>(i);
  });
  EXPECT_EQ(sum.load(), 99 * 100 / 2);
  for (int s : seen) EXPECT_EQ(s, 1);
}

TEST(RequestPool, JobsOfOneCallRunTogetherUpToThePoolSize) {
  RequestPool pool(3);
  std::atomic<int> running{0}, most{0};
  pool.run_all(9, [&](size_t) {
    const int now = ++running;
    int m = most.load();
    while (now > m && !most.compare_exchange_weak(m, now)) {
    }
    // Hold on until three run at once (a pool that ran them one by one would never get there).
    for (int k = 0; k < 500 && most.load() < 3; ++k) std::this_thread::sleep_for(1ms);
    --running;
  });
  EXPECT_EQ(most.load(), 3);  // together, and never more than the pool's threads
}

TEST(RequestPool, CallersFromManyThreadsShareTheBound) {
  RequestPool pool(2);
  std::atomic<int> running{0}, most{0}, done{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      pool.run_all(5, [&](size_t) {
        const int now = ++running;
        int m = most.load();
        while (now > m && !most.compare_exchange_weak(m, now)) {
        }
        std::this_thread::sleep_for(2ms);
        --running;
        ++done;
      });
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(done.load(), 20);
  EXPECT_LE(most.load(), 2);
}

nlohmann::json version(const std::string& rv, int epoch) {
  return {{"metadata", {{"name", "t"}, {"resourceVersion", rv}}}, {"status", {{"epoch", epoch}}}};
}

WrittenObjects::Ptr cached(nlohmann::json object) { return std::make_shared<const nlohmann::json>(std::move(object)); }

TEST(WrittenObjects, TheLastWriteStandsInWhileTheCacheIsBehind) {
  WrittenObjects w;
  const auto first = cached(version("1", 0));
  EXPECT_EQ(w.latest("ns/t", first), first);  // nothing written: the cache, the same object
  w.wrote("ns/t", version("1", 0), version("2", 1));
  EXPECT_EQ(*w.latest("ns/t", cached(version("1", 0))), version("2", 1));  // the cache still shows what we replaced
  // A second write based on the first, the cache still at the version before both.
  w.wrote("ns/t", version("2", 1), version("3", 2));
  EXPECT_EQ(*w.latest("ns/t", cached(version("1", 0))), version("3", 2));
  EXPECT_EQ(*w.latest("ns/t", cached(version("2", 1))), version("3", 2));  // our first write arrives, the second not yet
  EXPECT_EQ(w.size(), 1u);
  EXPECT_EQ(*w.latest("ns/t", cached(version("3", 2))), version("3", 2));  // caught up: the cache again
  EXPECT_EQ(w.size(), 0u);
}

TEST(WrittenObjects, SomeoneElsesVersionEndsTheEntry) {
  WrittenObjects w;
  w.wrote("ns/t", version("1", 0), version("2", 1));
  // Another writer changed the task after our write (a spec edit): its version is the truth.
  EXPECT_EQ(*w.latest("ns/t", cached(version("7", 1))), version("7", 1));
  EXPECT_EQ(*w.latest("ns/t", cached(version("1", 0))), version("1", 0));  // and nothing of ours remains
  w.wrote("ns/t", version("7", 1), version("8", 2));
  w.forget("ns/t");  // the task was deleted
  EXPECT_EQ(*w.latest("ns/t", cached(version("7", 1))), version("7", 1));
  EXPECT_EQ(*w.latest("ns/u", cached(version("7", 1))), version("7", 1));  // other keys untouched
}

}  // namespace
}  // namespace valley::kube
