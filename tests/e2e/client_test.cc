// The Kubernetes client against the real control plane: pagination, conflicts, server-side apply,
// deletes with preconditions, watches that survive an API server restart, relists after etcd
// compaction, and event aggregation (leader election: leader_election_test.cc).
#include <signal.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "operator/kube/error.h"
#include "operator/kube/events.h"
#include "operator/kube/informer.h"
#include "operator/kube/timefmt.h"
#include "tests/chaos/proxy.h"
#include "tests/e2e/support.h"

namespace valley::e2e {
namespace {

using kube::resources::kConfigMaps;
using kube::resources::kLeases;

using Rest = ClusterTest;

TEST_F(Rest, ListingMoreThan1500ObjectsFollowsContinueTokens) {
  auto client = unlimited_admin();
  const int n = 1600;
  std::vector<std::thread> creators;
  for (int t = 0; t < 8; ++t)
    creators.emplace_back([&, t] {
      for (int i = t; i < n; i += 8) client->create(kConfigMaps, ns, config_map("cm-" + std::to_string(i), {{"bulk", "yes"}}));
    });
  for (auto& c : creators) c.join();
  kube::ListOptions lo;
  lo.label_selector = "bulk=yes";
  lo.page_size = 500;
  // The transform sees each item whole (kind restored) as its page arrives; the list keeps what it left.
  int transformed = 0;
  lo.item_transform = [&](nlohmann::json& item) {
    EXPECT_EQ(item.value("kind", ""), "ConfigMap");
    EXPECT_TRUE(item.contains("data"));
    item.erase("data");
    ++transformed;
  };
  auto result = client->list(kConfigMaps, ns, lo);
  EXPECT_EQ(transformed, n);
  for (const auto& item : result.items) EXPECT_FALSE(item.contains("data"));
  EXPECT_EQ(result.items.size(), static_cast<size_t>(n));
  EXPECT_EQ(result.pages, 4);
  EXPECT_FALSE(result.resource_version.empty());
  std::set<std::string> names;
  for (const auto& item : result.items) names.insert(item["metadata"]["name"]);
  EXPECT_EQ(names.size(), static_cast<size_t>(n));  // no duplicates across pages
  EXPECT_EQ(result.items[0]["kind"], "ConfigMap");  // restored on list items
}

TEST_F(Rest, OnlyWhatTheAnswerMaskKeepsOfACreatedObjectIsBuilt) {
  auto client = unlimited_admin();
  const kube::FieldMask identity =
      kube::FieldMask::only({{"metadata", kube::FieldMask::only({{"name", kube::FieldMask::all()}, {"uid", kube::FieldMask::all()}})}});
  const json made = client->create(kConfigMaps, ns, config_map("masked"), &identity);
  EXPECT_EQ(made["metadata"].size(), 2u);
  EXPECT_EQ(made["metadata"]["name"], "masked");
  EXPECT_EQ(made["metadata"]["uid"], client->get(kConfigMaps, ns, "masked")["metadata"]["uid"]);
  EXPECT_EQ(made.size(), 1u);  // no data, kind or apiVersion
}

TEST_F(Rest, StaleUpdateIsAConflictAndRetryOnConflictConverges) {
  admin->create(kConfigMaps, ns, config_map("counter"));
  json a = admin->get(kConfigMaps, ns, "counter");
  json b = a;
  a["data"]["k"] = "from-a";
  admin->update(kConfigMaps, a);
  b["data"]["k"] = "from-b";
  try {
    admin->update(kConfigMaps, b);
    FAIL() << "a stale update was accepted";
  } catch (const kube::KubeError& e) {
    EXPECT_EQ(e.http_status(), 409);
    EXPECT_EQ(e.reason(), "Conflict");
  }
  // Ten writers incrementing one counter: every increment lands once.
  std::vector<std::thread> writers;
  for (int w = 0; w < 10; ++w)
    writers.emplace_back([&] {
      kube::retry_on_conflict([&] {
        json cm = admin->get(kConfigMaps, ns, "counter");
        int v = cm["data"].value("n", "0") == "0" ? 0 : std::stoi(cm["data"]["n"].get<std::string>());
        cm["data"]["n"] = std::to_string(v + 1);
        admin->update(kConfigMaps, cm);
      }, 50);
    });
  for (auto& w : writers) w.join();
  EXPECT_EQ(admin->get(kConfigMaps, ns, "counter")["data"]["n"], "10");
}

TEST_F(Rest, ServerSideApplyPatchesAndDeletePreconditions) {
  json desired = config_map("applied", {{"app", "valley"}});
  desired["metadata"]["namespace"] = ns;
  json applied = admin->apply(kConfigMaps, desired, "valley-test");
  EXPECT_EQ(applied["data"]["k"], "v");
  desired["data"]["k"] = "v2";
  applied = admin->apply(kConfigMaps, desired, "valley-test");
  EXPECT_EQ(applied["data"]["k"], "v2");
  bool managed = false;
  for (const auto& mf : applied["metadata"]["managedFields"]) managed |= mf["manager"] == "valley-test";
  EXPECT_TRUE(managed);

  json patched = admin->patch(kConfigMaps, ns, "applied", kube::PatchType::Merge, {{"data", {{"extra", "1"}}}});
  EXPECT_EQ(patched["data"]["extra"], "1");
  patched = admin->patch(kConfigMaps, ns, "applied", kube::PatchType::JSON,
                         json::array({{{"op", "remove"}, {"path", "/data/extra"}}}));
  EXPECT_FALSE(patched["data"].contains("extra"));

  kube::DeleteOptions wrong;
  wrong.precondition_uid = "00000000-0000-0000-0000-000000000000";
  try {
    admin->remove(kConfigMaps, ns, "applied", wrong);
    FAIL() << "delete ignored its precondition";
  } catch (const kube::KubeError& e) {
    EXPECT_EQ(e.http_status(), 409);
  }
  kube::DeleteOptions right;
  right.precondition_uid = patched["metadata"]["uid"];
  EXPECT_TRUE(admin->remove(kConfigMaps, ns, "applied", right));
  EXPECT_FALSE(admin->remove(kConfigMaps, ns, "applied"));  // already gone: not an error
  try {
    admin->get(kConfigMaps, ns, "applied");
    FAIL();
  } catch (const kube::KubeError& e) {
    EXPECT_EQ(e.http_status(), 404);
    EXPECT_EQ(e.reason(), "NotFound");
  }
}

using Watch = ClusterTest;

// Handlers run inside libcurl's callback; what they throw must reach the caller, not crash.
TEST_F(Watch, AnExceptionFromTheHandlerReachesTheCaller) {
  admin->create(kConfigMaps, ns, config_map("trigger"));
  kube::WatchOptions wo;
  wo.timeout_seconds = 10;
  EXPECT_THROW(admin->watch(kConfigMaps, ns, wo, [](kube::WatchEvent&&) -> bool { throw std::runtime_error("handler failed"); }),
               std::runtime_error);
  // The client is still usable afterwards.
  EXPECT_NO_THROW(admin->get(kConfigMaps, ns, "trigger"));
}

TEST_F(Watch, DeletesAndIndexesFollowTheServer) {
  auto client = unlimited_admin();
  for (int i = 0; i < 5; ++i) client->create(kConfigMaps, ns, config_map("x-" + std::to_string(i), {{"watched", "yes"}}));
  Recorder rec;
  auto informer_ptr = watched_config_maps(*client, ns, rec);
  kube::Informer& informer = *informer_ptr;
  client->remove(kConfigMaps, ns, "x-3");
  EXPECT_TRUE(eventually([&] {
    std::lock_guard l(rec.mu);
    return rec.deleted.count("x-3") == 1;
  }, 10s));
  EXPECT_EQ(informer.store().size(), 4u);
  EXPECT_EQ(informer.store().by_index(kube::index::kLabel, "watched=yes").size(), 4u);
  EXPECT_EQ(informer.store().by_index(kube::index::kNamespace, ns).size(), 4u);
  // Cached objects carry no managedFields (stripped to save memory).
  EXPECT_FALSE((*informer.store().get(ns + "/x-0"))["metadata"].contains("managedFields"));
  informer.stop();
}

// A connection that dies without a FIN sends nothing more, and the server's own watch timeout is
// minutes away: the informer's idle deadline must take it for dead and resume from its last
// resourceVersion (no relist), so what changed meanwhile still arrives.
TEST_F(Watch, AWatchWhoseConnectionWentSilentResumesWithoutARelist) {
  kube::ClusterConfig config = admin_config();
  const auto colon = config.server.rfind(':');
  chaos::Proxy proxy("127.0.0.1", std::stoi(config.server.substr(colon + 1)));
  config.server = config.server.substr(0, colon + 1) + std::to_string(proxy.port());
  kube::HttpOptions options;
  options.qps = 0;
  kube::Client client(config, options);
  kube::InformerOptions io;
  io.ns = ns;
  io.label_selector = "watched=yes";
  io.watch_idle_timeout = 3s;
  kube::Informer informer(client, kConfigMaps, io);
  Recorder rec;
  informer.add_handlers(rec.handlers());
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(10s));
  // The watch streams (a change arrives through it) before its connection goes silent: stalled
  // earlier, the watch could still be opened afterwards on a fresh connection.
  admin->create(kConfigMaps, ns, config_map("before-stall", {{"watched", "yes"}}));
  ASSERT_TRUE(eventually([&] {
    std::lock_guard l(rec.mu);
    return rec.added.count("before-stall") == 1;
  }, 30s));
  proxy.stall_open();
  admin->create(kConfigMaps, ns, config_map("after-stall", {{"watched", "yes"}}));
  EXPECT_TRUE(eventually([&] {
    std::lock_guard l(rec.mu);
    return rec.added.count("after-stall") == 1;
  }, 60s)) << "the change made while the watch was silent never arrived";
  EXPECT_GE(informer.stats().watch_errors.load(), 1u);
  EXPECT_EQ(informer.stats().lists.load(), 1u) << "a silent watch must resume, not relist";
  informer.stop();
}

using Events = ClusterTest;

TEST_F(Events, AHotLoopBecomesOneEventWithACount) {
  json cm = admin->create(kConfigMaps, ns, config_map("subject"));
  uint64_t writes = 0;
  {
    kube::EventOptions eo;
    eo.reporting_instance = "e2e";
    kube::EventRecorder recorder(*admin, eo);
    for (int i = 0; i < 500; ++i) recorder.warning(cm, "Unschedulable", "Admit", "needs 8 GPUs, 3 free");
    recorder.normal(cm, "Admitted", "Admit", "4 workers placed");
    recorder.flush();
    writes = recorder.writes();
  }
  auto events = admin->list(kube::resources::kEvents, ns);
  ASSERT_EQ(events.items.size(), 2u);
  int total = 0;
  for (const auto& ev : events.items) {
    EXPECT_EQ(ev["regarding"]["uid"], cm["metadata"]["uid"]);
    EXPECT_EQ(ev["reportingController"], "valley.dev/operator");
    if (ev["reason"] == "Unschedulable") {
      total = ev.contains("series") ? ev["series"]["count"].get<int>() : 1;
      EXPECT_EQ(ev["type"], "Warning");
    }
  }
  EXPECT_EQ(total, 500);
  EXPECT_LE(writes, 4u) << "500 recordings should cost a handful of writes";
}

}  // namespace
}  // namespace valley::e2e
