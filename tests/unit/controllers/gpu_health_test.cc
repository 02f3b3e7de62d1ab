#include "controllers/gpu/health.h"
#include "controllers/gpu/utilization.h"

#include <gtest/gtest.h>

namespace valley::gpu {
namespace {

// What Prometheus answers for an instant query, with DCGM-exporter's labels.
const char* kXid = R"({"status":"success","data":{"resultType":"vector","result":[
  {"metric":{"Hostname":"a100-od-0","gpu":"3","UUID":"GPU-3","modelName":"NVIDIA A100-SXM4-80GB"},"value":[1795316645.1,"79"]},
  {"metric":{"Hostname":"a100-od-1","gpu":"0"},"value":[1795316645.1,"13"]},
  {"metric":{"Hostname":"a100-od-1","gpu":"1"},"value":[1795316645.1,"0"]},
  {"metric":{"gpu":"2"},"value":[1795316645.1,"48"]},
  {"metric":{"Hostname":"x"},"value":[1795316645.1,"NaN"]}]}})";

TEST(PromQuery, ParsesVectorsAndSaysWhatIsWrongOtherwise) {
  std::string error;
  auto v = prom::parse_vector(kXid, &error);
  ASSERT_TRUE(v) << error;
  ASSERT_EQ(v->size(), 4u);  // NaN dropped
  EXPECT_EQ((*v)[0].labels.at("Hostname"), "a100-od-0");
  EXPECT_EQ((*v)[0].value, 79);
  EXPECT_FALSE(prom::parse_vector(R"({"status":"error","errorType":"bad_data","error":"parse error at char 5"})", &error));
  EXPECT_EQ(error, "status error: parse error at char 5");
  EXPECT_FALSE(prom::parse_vector(R"({"status":"success","data":{"resultType":"matrix","result":[]}})", &error));
  EXPECT_EQ(error, "not a vector result");
  EXPECT_FALSE(prom::parse_vector("<html>", &error));
  EXPECT_EQ(error, "not JSON");
  auto odd = prom::parse_vector(R"({"status":"success","data":{"resultType":"vector","result":[7,{"value":[1,2]},{"metric":{"a":1},"value":[1,"1e3"]}]}})", &error);
  ASSERT_TRUE(odd);
  ASSERT_EQ(odd->size(), 1u);
  EXPECT_EQ((*odd)[0].value, 1000);
  EXPECT_TRUE((*odd)[0].labels.empty());  // a non-string label value is ignored
}

TEST(GpuHealth, CriticalXidsEccRowRemapsAndHeatMakeANodeFaulty) {
  HealthConfig c;
  c.window = std::chrono::seconds(120);
  const auto qs = queries(c);
  ASSERT_EQ(qs.size(), 4u);
  EXPECT_EQ(qs[0].promql, "max_over_time(DCGM_FI_DEV_XID_ERRORS[120s])");
  EXPECT_EQ(qs[3].promql, "min_over_time(DCGM_FI_DEV_GPU_TEMP[120s])");
  std::string error;
  std::map<std::string, std::vector<prom::Sample>> by;
  by["xid"] = *prom::parse_vector(kXid, &error);
  by["ecc_dbe"] = {{{{"Hostname", "b"}, {"gpu", "1"}}, 2}, {{{"Hostname", "c"}}, 0}};
  by["row_remap"] = {{{{"Hostname", "d"}, {"gpu", "7"}}, 1}};
  by["temperature"] = {{{{"Hostname", "e"}, {"gpu", "0"}}, 91}, {{{"Hostname", "f"}, {"gpu", "0"}}, 89.5}};
  auto f = node_faults(c, by);
  EXPECT_EQ(f.at("a100-od-0"), "XID 79 (GPU has fallen off the bus) on GPU 3 (DCGM)");
  EXPECT_FALSE(f.count("a100-od-1"));  // XID 13 is the program's (a graphics engine exception), 0 is none
  EXPECT_EQ(f.at("b"), "double-bit ECC errors on GPU 1 (DCGM)");
  EXPECT_FALSE(f.count("c"));
  EXPECT_EQ(f.at("d"), "row remap failure on GPU 7 (DCGM)");
  EXPECT_EQ(f.at("e"), "temperature 91 C for 120s on GPU 0 (DCGM)");
  EXPECT_FALSE(f.count("f"));
  EXPECT_EQ(f.size(), 4u);  // the sample without a Hostname names no node
  c.critical_xids = {13};
  EXPECT_EQ(node_faults(c, {{"xid", by["xid"]}}).at("a100-od-1"), "XID 13 on GPU 0 (DCGM)");
}

}  // namespace
}  // namespace valley::gpu

namespace valley::gpu {
namespace {

const kube::SystemTime kT0 = kube::SystemTime(std::chrono::seconds(1795316645));

TEST(Utilization, ReadingsAccrueGpuTimeOnceWithIdleGpusAndAStretchStart) {
  api::IdlePolicy p;  // below 5% for 30m
  TaskReading r{kT0, {{50, 1000}, {2, 3000}}, std::chrono::seconds(120)};
  nlohmann::json u = accrue(nlohmann::json::object(), r, p);
  EXPECT_EQ(u["gpuPercent"], 26);
  EXPECT_EQ(u["memoryUsedMiB"], 2000);
  EXPECT_FALSE(u.contains("sampledGpuSeconds"));  // the first reading has no time before it
  EXPECT_FALSE(u.contains("idleSince"));
  EXPECT_EQ(accrue(u, r, p), u);  // the same reading again counts nothing
  // 60 s later, both GPUs idle: 120 GPU-seconds sampled, 120 idle (the previous reading's idle GPU counts
  // by what this reading says, a sample for the whole interval).
  u = accrue(u, {kT0 + std::chrono::seconds(60), {{1, 0}, {3, 0}}, std::chrono::seconds(120)}, p);
  EXPECT_EQ(u["sampledGpuSeconds"], 120);
  EXPECT_EQ(u["idleGpuSeconds"], 120);
  EXPECT_EQ(u["meanGpuPercent"], 2);
  EXPECT_EQ(u["idleSince"], kube::format_time(kT0 + std::chrono::seconds(60)));
  // An hour's gap (the operator was away) counts only max_gap.
  u = accrue(u, {kT0 + std::chrono::seconds(3660), {{0, 0}, {0, 0}}, std::chrono::seconds(120)}, p);
  EXPECT_EQ(u["sampledGpuSeconds"], 360);
  EXPECT_EQ(u["idleGpuHours"], "0.10");
  EXPECT_EQ(idle_for(u, kT0 + std::chrono::seconds(1800), p), std::nullopt);  // idle 29 min: not yet
  EXPECT_EQ(idle_for(u, kT0 + std::chrono::seconds(1860), p), std::chrono::seconds(1800));
  // Busy again: the stretch ends; no GPU reported: no stretch goes on either.
  auto busy = accrue(u, {kT0 + std::chrono::seconds(3720), {{90, 0}, {80, 0}}, std::chrono::seconds(120)}, p);
  EXPECT_FALSE(busy.contains("idleSince"));
  auto gone = accrue(u, {kT0 + std::chrono::seconds(3720), {}, std::chrono::seconds(120)}, p);
  EXPECT_FALSE(gone.contains("idleSince"));
  EXPECT_EQ(gone["sampledGpuSeconds"], 360);
}

TEST(Utilization, PodReadingsMatchUtilizationAndMemoryOfEachGpu) {
  std::map<std::string, std::vector<prom::Sample>> by;
  by["util"] = {{{{"Hostname", "n1"}, {"gpu", "0"}, {"namespace", "team"}, {"pod", "job-worker-0"}}, 97},
                {{{"Hostname", "n1"}, {"gpu", "1"}, {"namespace", "team"}, {"pod", "job-worker-0"}}, 93},
                {{{"Hostname", "n2"}, {"gpu", "0"}, {"namespace", "team"}, {"pod", "job-worker-1"}}, 4},
                {{{"Hostname", "n2"}, {"gpu", "1"}, {"namespace", ""}, {"pod", ""}}, 0}};
  by["memory"] = {{{{"Hostname", "n1"}, {"gpu", "0"}, {"namespace", "team"}, {"pod", "job-worker-0"}}, 70000}};
  auto r = pod_readings(by);
  ASSERT_EQ(r.size(), 2u);
  ASSERT_EQ(r["team/job-worker-0"].size(), 2u);
  EXPECT_EQ(r["team/job-worker-0"][0].util_percent, 97);
  EXPECT_EQ(r["team/job-worker-0"][0].memory_mib, 70000);
  EXPECT_EQ(r["team/job-worker-1"][0].util_percent, 4);
  EXPECT_EQ(utilization_queries()[0].promql, "DCGM_FI_DEV_GPU_UTIL{pod!=\"\"}");
}

}  // namespace
}  // namespace valley::gpu
