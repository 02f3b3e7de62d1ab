// The example workload under real OpenMPI with a real S3 checkpoint store (versitygw): trained at
// 4 ranks, interrupted by SIGTERM mid-run (as Kubernetes stops a pod), resumed at 3 ranks, it must
// end where an uninterrupted run ends. Tolerance: every weight within 1e-9 of the uninterrupted
// run's (the two differ only in floating-point summation order across ranks; seen: ~1e-16).
#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "operator/storage/checkpoint_record.h"
#include "tests/storage/versitygw.h"

namespace valley::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr double kTolerance = 1e-9;

std::vector<double> read_weights(const fs::path& p) {
  std::vector<double> w;
  std::ifstream in(p);
  double v;
  while (in >> v) w.push_back(v);
  return w;
}

class WorkloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("valley-workload-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // mpirun -np N valley-train ..., with the checkpoint store's environment.
  std::vector<std::string> mpirun(int np, const std::map<std::string, std::string>& env, const std::vector<std::string>& args) {
    std::vector<std::string> argv{"/usr/bin/env", "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
                                  "OMPI_MCA_rmaps_base_oversubscribe=1"};
    for (const auto& [k, v] : env) argv.push_back(k + "=" + v);
    for (const auto& a : std::vector<std::string>{"mpirun", "-np", std::to_string(np), e2e::binary("valley-train"),
                                                  "--steps", "600", "--checkpoint-every", "25"})
      argv.push_back(a);
    for (const auto& a : args) argv.push_back(a);
    return argv;
  }
  fs::path dir_;
};

TEST_F(WorkloadTest, ResumesAtADifferentWorldSizeAndMatchesAnUninterruptedRun) {
  VersityGw gw;
  // Reference: uninterrupted, 4 ranks, no store.
  {
    e2e::ChildProcess ref(mpirun(4, {}, {"--output", (dir_ / "reference.txt").string()}), (dir_ / "ref.log").string());
    ASSERT_EQ(ref.wait(120s), 0) << ref.output();
  }
  auto env = gw.env();
  env["VALLEY_CHECKPOINT_URI"] = std::string("s3://") + VersityGw::kBucket + "/team/run-1";
  env["VALLEY_EPOCH"] = "1";
  auto store = gw.store("team/run-1");
  // Interrupted: 4 ranks, slowed down; SIGTERM once a periodic checkpoint exists.
  {
    e2e::ChildProcess run(mpirun(4, env, {"--step-delay-ms", "20", "--output", (dir_ / "never.txt").string()}),
                          (dir_ / "first.log").string());
    ASSERT_TRUE(e2e::eventually([&] { return store->get(storage::kLatestKey).has_value(); }, 60s)) << run.output();
    run.signal(SIGTERM);
    EXPECT_NE(run.wait(60s), 0) << "a run stopped by SIGTERM must not report success\n" << run.output();
    EXPECT_NE(run.output().find("on SIGTERM"), std::string::npos) << run.output();
  }
  EXPECT_FALSE(fs::exists(dir_ / "never.txt"));
  std::string err;
  auto latest = storage::parse_checkpoint_record(*store->get(storage::kLatestKey), &err);
  ASSERT_TRUE(latest) << err;
  EXPECT_GT(latest->step, 0);
  EXPECT_LT(latest->step, 600) << "SIGTERM came too late to test a resume";
  EXPECT_EQ(latest->world_size, 4);
  EXPECT_EQ(latest->epoch, 1);
  // Resumed: 3 ranks, from the checkpoint.
  env["VALLEY_RESUME"] = "1";
  env["VALLEY_EPOCH"] = "2";
  {
    e2e::ChildProcess resumed(mpirun(3, env, {"--output", (dir_ / "resumed.txt").string()}), (dir_ / "second.log").string());
    ASSERT_EQ(resumed.wait(120s), 0) << resumed.output();
    EXPECT_NE(resumed.output().find("resumed from step " + std::to_string(latest->step) + " (saved at world size 4) at world size 3"),
              std::string::npos)
        << resumed.output();
  }
  auto a = read_weights(dir_ / "reference.txt"), b = read_weights(dir_ / "resumed.txt");
  ASSERT_EQ(a.size(), 16u);
  ASSERT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  EXPECT_LE(worst, kTolerance);
  std::printf("interrupted at step %lld; max |w_resumed - w_uninterrupted| = %.3g (tolerance %.0g)\n",
              static_cast<long long>(latest->step), worst, kTolerance);
  auto final_record = storage::parse_checkpoint_record(*store->get(storage::kLatestKey), &err);
  ASSERT_TRUE(final_record);
  EXPECT_EQ(final_record->step, 600);
  EXPECT_EQ(final_record->world_size, 3);
}

TEST_F(WorkloadTest, BadCheckpointUriIsAClearErrorNotACrash) {
  e2e::ChildProcess run(mpirun(2, {{"VALLEY_CHECKPOINT_URI", "gs://bucket/x"}}, {}), (dir_ / "bad.log").string());
  EXPECT_EQ(run.wait(60s), 2) << run.output();
  EXPECT_NE(run.output().find("scheme \"gs\""), std::string::npos) << run.output();
}

}  // namespace
}  // namespace valley::testing
