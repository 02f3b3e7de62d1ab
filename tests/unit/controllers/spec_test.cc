#include "controllers/api/spec.h"

#include <gtest/gtest.h>

namespace valley::api {
namespace {

json mpi_task() {
  return json::parse(R"({"apiVersion":"valley.dev/v1beta1","kind":"TrainingTask",
    "metadata":{"name":"resnet","namespace":"team-a","uid":"u-1","generation":2},
    "spec":{"taskType":"MPI","priority":20,"replicas":{"min":4,"max":16},"amdSupport":true,"reduceCost":true,
      "master":{"image":"l:1","command":["mpirun","python","train.py"]},
      "worker":{"image":"w:1","amdImage":"w-rocm:1","gpus":"2","slotsPerWorker":2},
      "checkpoint":{"uri":"s3://bucket/team-a/resnet/","secretRef":{"name":"s3"}},
      "estimatedDuration":"6h","maxCost":"250.50",
      "runPolicy":{"backoffLimit":5,"activeDeadlineSeconds":3600,"ttlSecondsAfterFinished":60,"cleanPodPolicy":"All"}}})");
}

TEST(TaskSpec, ParsesEveryField) {
  auto parsed = parse_task(mpi_task());
  ASSERT_TRUE(parsed.errors.empty()) << parsed.errors[0];
  const TaskSpec& s = *parsed.spec;
  EXPECT_EQ(s.name, "resnet");
  EXPECT_EQ(s.ns, "team-a");
  EXPECT_EQ(s.generation, 2);
  EXPECT_EQ(s.type, TaskType::MPI);
  EXPECT_EQ(s.priority, 20);
  EXPECT_EQ(s.min_workers, 4);
  EXPECT_EQ(s.max_workers, 16);
  EXPECT_EQ(s.vendors, (std::vector<std::string>{"nvidia", "amd"}));
  EXPECT_TRUE(s.reduce_cost);
  EXPECT_EQ(s.launcher.command.size(), 3u);
  EXPECT_EQ(s.worker.image_for("amd"), "w-rocm:1");
  EXPECT_EQ(s.worker.image_for("nvidia"), "w:1");
  EXPECT_EQ(s.gpus.milli, 2000);
  EXPECT_EQ(s.slots_per_worker, 2);
  EXPECT_EQ(s.checkpoint_secret, "s3");
  EXPECT_EQ(s.estimated_duration, std::chrono::hours(6));
  EXPECT_EQ(s.max_cost_micros, 250'500'000);
  EXPECT_EQ(s.run_policy.backoff_limit, 5);
  EXPECT_EQ(s.run_policy.active_deadline_seconds, 3600);
  EXPECT_EQ(s.run_policy.clean_pod_policy, CleanPodPolicy::All);
}

// The light reader the Tenant status uses for waiting tasks agrees with the parser.
TEST(TaskSpec, GpusAtMaxReadLightlyAgreeWithTheParser) {
  for (const char* spec : {R"({"taskType":"MPI","replicas":{"min":2,"max":6},"master":{"image":"l"},"worker":{"image":"w","gpus":"4"}})",
                           R"({"taskType":"MPI","replicas":{"min":1,"max":3},"master":{"image":"l"},"worker":{"image":"w","gpus":"0.25"}})",
                           R"({"taskType":"MPI","master":{"image":"l"},"worker":{"image":"w"}})",
                           R"({"taskType":"Single","image":"i","worker":{"gpus":"2"}})", R"({"taskType":"Single","image":"i"})"}) {
    const json object = {{"metadata", {{"name", "t"}, {"namespace", "n"}, {"uid", "u"}}}, {"spec", json::parse(spec)}};
    auto parsed = parse_task(object);
    ASSERT_TRUE(parsed.spec) << spec << ": " << parsed.errors.front();
    EXPECT_EQ(gpu_milli_at_max(object), int64_t{parsed.spec->max_workers} * parsed.spec->gpus.milli) << spec;
  }
  EXPECT_EQ(gpu_milli_at_max(json::parse(R"({"spec":{"worker":{"gpus":"lots"}}})")), 0);
}

TEST(TaskSpec, FractionalGpus) {
  json t = mpi_task();
  t["spec"]["worker"]["gpus"] = "0.5";
  EXPECT_EQ(parse_task(t).spec->gpus.milli, 500);
  t["spec"]["worker"]["gpus"] = "0.125";
  EXPECT_EQ(parse_task(t).spec->gpus.milli, 125);
  for (const char* bad : {"0", "0.0", "1.5", "-1", "abc", "", "0.0001"}) {
    t["spec"]["worker"]["gpus"] = bad;
    EXPECT_FALSE(parse_task(t).errors.empty()) << bad;
  }
}

TEST(TaskSpec, SingleTaskTakesItsImageFromTheTop) {
  json t = json::parse(R"({"metadata":{"name":"s","namespace":"n"},"spec":{"taskType":"Single","image":"i:1","command":["python"]}})");
  auto parsed = parse_task(t);
  ASSERT_TRUE(parsed.spec.has_value());
  EXPECT_EQ(parsed.spec->worker.image, "i:1");
  EXPECT_EQ(parsed.spec->worker.command[0], "python");
}

TEST(TaskSpec, EveryProblemIsReportedWithItsPath) {
  json t = json::parse(R"({"metadata":{"name":"x"},"spec":{"taskType":"Horovod","priority":101,
    "replicas":{"min":5,"max":2},"worker":{"gpus":"lots"},"maxCost":"cheap","estimatedDuration":"soon",
    "runPolicy":{"cleanPodPolicy":"Sometimes","backoffLimit":"3"}}})");
  auto parsed = parse_task(t);
  EXPECT_FALSE(parsed.spec.has_value());
  std::string all;
  for (const auto& e : parsed.errors) all += e + "\n";
  for (const char* path : {"spec.taskType", "spec.priority", "spec.replicas.min", "spec.worker.gpus", "spec.maxCost",
                           "spec.estimatedDuration", "spec.runPolicy.cleanPodPolicy", "spec.runPolicy.backoffLimit"})
    EXPECT_NE(all.find(path), std::string::npos) << path << " missing from:\n" << all;
}

TEST(TaskSpec, MissingOrMistypedStructureIsAnErrorNotACrash) {
  for (const char* text : {R"([])", R"({})", R"({"metadata":{"name":"x"}})", R"({"metadata":{"name":"x"},"spec":7})",
                           R"({"metadata":{"name":"x"},"spec":{"replicas":[1,2],"master":"l","worker":{"command":"run"}}})"}) {
    auto parsed = parse_task(json::parse(text));
    EXPECT_FALSE(parsed.errors.empty()) << text;
  }
}

// Fuzzing found metadata.generation read with value<int64_t>(), which throws on a string.
TEST(TaskSpec, AMistypedGenerationReadsAsZero) {
  auto parsed = parse_task(json::parse(R"({"metadata":{"name":"x","generation":"6h30m"},"spec":{"master":{"image":"l"},"worker":{"image":"w"}}})"));
  ASSERT_TRUE(parsed.spec);
  EXPECT_EQ(parsed.spec->generation, 0);
}

// spec.maxCost is read by the same parser as the PricingPolicy's prices (controllers/api/money.h).
// Fuzzing found the spec's own parser overflowing int64 on 16 digits before they were one.
TEST(TaskSpec, MaxCostIsMoneyInMicros) {
  auto with_cost = [](const std::string& cost) {
    return parse_task(json{{"metadata", {{"name", "x"}}},
                           {"spec", {{"master", {{"image", "l"}}}, {"worker", {{"image", "w"}}}, {"maxCost", cost}}}});
  };
  EXPECT_EQ(with_cost("0").spec->max_cost_micros, 0);
  EXPECT_EQ(with_cost("41.2").spec->max_cost_micros, 41'200'000);
  EXPECT_EQ(with_cost("0.000001").spec->max_cost_micros, 1);
  for (const char* bad : {"", "-1", "1.", ".5", "1,5", "1.0000001", "1e3", "9999999999999999", "090209020000"}) {
    auto parsed = with_cost(bad);
    ASSERT_FALSE(parsed.spec) << bad;
    EXPECT_NE(parsed.errors.at(0).find("spec.maxCost"), std::string::npos) << bad;
  }
}

}  // namespace
}  // namespace valley::api
