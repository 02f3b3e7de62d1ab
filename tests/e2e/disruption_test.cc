// Tests that disrupt the control plane (API server restarts, etcd compaction). They run in their
// own binary, after every other e2e test, and leave the cluster healthy again: client-go based
// components (kube-controller-manager) back off for tens of seconds after an API server outage.
#include <atomic>
#include <thread>

#include "operator/kube/error.h"
#include "operator/kube/informer.h"
#include "tests/e2e/support.h"

namespace valley::e2e {
namespace {

using kube::resources::kConfigMaps;

class Disruption : public ClusterTest {
 protected:
  void TearDown() override {
    ClusterTest::TearDown();
    EXPECT_TRUE(wait_until_cluster_serves_pods(180s)) << "the cluster did not recover";
  }
};
using Watch = Disruption;

// Creates `name`, retrying while the API server is away (as a controller would).
void create_until_done(kube::Client& client, const std::string& ns, const std::string& name) {
  for (int attempt = 0; attempt < 600; ++attempt) {
    try {
      client.create(kConfigMaps, ns, config_map(name, {{"watched", "yes"}}));
      return;
    } catch (const kube::KubeError& e) {
      if (e.http_status() == 409) return;  // an earlier attempt landed after all
      std::this_thread::sleep_for(100ms);
    }
  }
  FAIL() << "could not create " << name;
}

TEST_F(Watch, InformerSurvivesAnApiServerRestartWithoutMissingAnEvent) {
  auto client = unlimited_admin();
  Recorder rec;
  auto informer_ptr = watched_config_maps(*client, ns, rec);
  kube::Informer& informer = *informer_ptr;

  const int n = 120;
  std::atomic<int> written{0};
  auto writer = std::thread([&] {
    auto w = unlimited_admin();
    for (int i = 0; i < n; ++i) {
      create_until_done(*w, ns, "cm-" + std::to_string(i));
      ++written;
      std::this_thread::sleep_for(20ms);
    }
  });
  ASSERT_TRUE(eventually([&] { return written.load() >= 30; }, 30s));
  ASSERT_EQ(cluster_sh({"restart", "apiserver"}), 0);  // mid-stream
  writer.join();

  EXPECT_TRUE(eventually([&] { return rec.added_count() == static_cast<size_t>(n); }, 60s))
      << "informer saw " << rec.added_count() << " of " << n;
  EXPECT_EQ(informer.store().size(), static_cast<size_t>(n));
  EXPECT_GE(informer.stats().watches.load(), 2u) << "the watch was not resumed";
  EXPECT_TRUE(rec.deleted.empty());
  informer.stop();
}

TEST_F(Watch, StaleResourceVersionAfterCompactionLeadsToOneRelistNotACrashLoop) {
  auto client = unlimited_admin();
  client->create(kConfigMaps, ns, config_map("before", {{"watched", "yes"}}));
  Recorder rec;
  auto informer_ptr = watched_config_maps(*client, ns, rec);
  kube::Informer& informer = *informer_ptr;
  std::string synced_rv = informer.last_resource_version();

  // History the informer does not follow (other labels) moves etcd on; then compact and restart
  // the API server so its watch cache starts after the informer's resourceVersion.
  for (int i = 0; i < 20; ++i) client->create(kConfigMaps, ns, config_map("noise-" + std::to_string(i)));
  ASSERT_EQ(cluster_sh({"stop", "apiserver"}), 0);
  ASSERT_EQ(cluster_sh({"compact"}), 0);
  ASSERT_EQ(cluster_sh({"start", "apiserver"}), 0);

  // Once listed again, it keeps working.
  ASSERT_TRUE(eventually([&] { return informer.stats().expired.load() >= 1; }, 60s))
      << "lists " << informer.stats().lists << ", watch errors " << informer.stats().watch_errors;
  create_until_done(*client, ns, "after");
  EXPECT_TRUE(eventually([&] { return rec.added_count() == 2; }, 30s));
  EXPECT_LE(informer.stats().lists.load(), 3u) << "relisting in a loop";
  EXPECT_NE(informer.last_resource_version(), synced_rv);

  // The old resourceVersion is refused with 410 to a plain watch too.
  try {
    kube::WatchOptions wo;
    wo.resource_version = synced_rv;
    wo.timeout_seconds = 5;
    bool expired_event = false;
    client->watch(kConfigMaps, ns, wo, [&](kube::WatchEvent&& ev) {
      expired_event = ev.type == "ERROR" && ev.object.value("code", 0) == 410;
      return false;
    });
    EXPECT_TRUE(expired_event);
  } catch (const kube::KubeError& e) {
    EXPECT_EQ(e.http_status(), 410);
  }
  informer.stop();
}

}  // namespace
}  // namespace valley::e2e
