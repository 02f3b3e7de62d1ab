#include "operator/kube/this_thread.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

namespace valley::kube {
namespace {

std::string comm_of_this_thread() {
  std::ifstream in("/proc/self/task/" + std::to_string(syscall(SYS_gettid)) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

TEST(ThisThread, NamesTheCallingThreadAndCutsAt15Characters) {
  std::string short_name, long_name;
  std::thread([&] {
    name_this_thread("planner");
    short_name = comm_of_this_thread();
    name_this_thread("watch-trainingtasks");
    long_name = comm_of_this_thread();
  }).join();
  EXPECT_EQ(short_name, "planner");
  EXPECT_EQ(long_name, "watch-trainingt");
}

TEST(ThisThread, CpuSecondsGrowWithWorkAndNotWithSleep) {
  double busy = 0, asleep = 0;
  std::thread([&] {
    const double a = thread_cpu_seconds();
    volatile uint64_t sink = 0;
    for (uint64_t i = 0; i < 50'000'000; ++i) sink = sink + i;
    const double b = thread_cpu_seconds();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const double c = thread_cpu_seconds();
    busy = b - a;
    asleep = c - b;
  }).join();
  EXPECT_GT(busy, 0.0);
  // A sleeping thread uses no CPU: far under the 0.3 s it slept, whatever the machine's load.
  EXPECT_LT(asleep, 0.15);
}

}  // namespace
}  // namespace valley::kube
