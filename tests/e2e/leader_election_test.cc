// Leader election between two real operator processes on the real control plane: exactly one
// leads, a survivor takes over after kill -9 (never while the dead leader's lease holds), a leader
// whose lease was taken steps down, an orderly shutdown hands over at once. Run alone: with 4 s
// leases, the load of other tests beside them could delay a renewal past its deadline, a step-down
// that is right but not what these tests look at.
#include <signal.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "operator/kube/error.h"
#include "operator/kube/timefmt.h"
#include "tests/e2e/support.h"

namespace valley::e2e {
namespace {

using kube::resources::kLeases;

struct OperatorProcess {
  std::unique_ptr<ChildProcess> process;
  std::string id;
};

OperatorProcess start_operator(const std::string& ns, const std::string& id) {
  auto argv = operator_argv(ns, {"--leader-elect-identity=" + id, "--leader-elect-lease-duration=4s",
                                 "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms"});
  return {std::make_unique<ChildProcess>(argv, ::testing::TempDir() + "/operator-" + id + ".log"), id};
}

bool leads(const OperatorProcess& p) { return p.process->output().find(p.id + " became the leader") != std::string::npos; }

using LeaderElection = ClusterTest;

TEST_F(LeaderElection, ExactlyOneLeadsAndASurvivorTakesOverAfterKill9) {
  // Every version of the Lease, to check that leadership never overlaps.
  std::mutex mu;
  std::vector<json> history;
  std::atomic<bool> stop_watch{false};
  std::thread watcher([&] {
    auto c = unlimited_admin();
    while (!stop_watch) {
      try {
        kube::WatchOptions wo;
        wo.timeout_seconds = 5;
        wo.field_selector = "metadata.name=valley-operator";
        c->watch(kLeases, ns, wo, [&](kube::WatchEvent&& ev) {
          if (ev.type == "ADDED" || ev.type == "MODIFIED") {
            std::lock_guard l(mu);
            history.push_back(ev.object["spec"]);
          }
          return !stop_watch.load();
        }, &stop_watch);
      } catch (const kube::KubeError&) {
      }
    }
  });

  auto a = start_operator(ns, "op-a");
  auto b = start_operator(ns, "op-b");
  ASSERT_TRUE(eventually([&] { return leads(a) || leads(b); }, 20s));
  std::this_thread::sleep_for(2s);  // several renewals: still exactly one leader
  ASSERT_NE(leads(a), leads(b)) << a.process->output() << b.process->output();
  auto& leader = leads(a) ? a : b;
  auto& follower = leads(a) ? b : a;

  auto killed_at = std::chrono::steady_clock::now();
  leader.process->signal(SIGKILL);
  leader.process->wait(5s);
  ASSERT_TRUE(eventually([&] { return leads(follower); }, 15s)) << follower.process->output();
  auto failover = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  std::cout << "[figure] leader failover after kill -9: " << failover << " s (lease duration 4 s)\n";
  RecordProperty("failover_seconds", std::to_string(failover));

  stop_watch = true;
  watcher.join();
  // The survivor acquired no earlier than a full lease duration after the dead leader's last renewal.
  std::lock_guard l(mu);
  std::string last_renew_of_dead;
  std::string acquire_of_survivor;
  for (const auto& spec : history) {
    if (spec.value("holderIdentity", "") == leader.id) last_renew_of_dead = spec.value("renewTime", "");
    if (spec.value("holderIdentity", "") == follower.id && acquire_of_survivor.empty())
      acquire_of_survivor = spec.value("acquireTime", "");
  }
  ASSERT_FALSE(last_renew_of_dead.empty());
  ASSERT_FALSE(acquire_of_survivor.empty());
  auto gap = *kube::parse_time(acquire_of_survivor) - *kube::parse_time(last_renew_of_dead);
  EXPECT_GE(gap, 4s) << "leadership overlapped: " << last_renew_of_dead << " -> " << acquire_of_survivor;

  follower.process->signal(SIGTERM);
  EXPECT_EQ(follower.process->wait(10s), 0);
}

// The leader renews with one conditional write of the lease it last wrote; when someone else has
// written the lease since, that write conflicts and the leader reads the lease and steps down.
TEST_F(LeaderElection, ALeaderWhoseLeaseWasTakenStepsDown) {
  auto a = start_operator(ns, "op-a");
  ASSERT_TRUE(eventually([&] { return leads(a); }, 20s));
  std::this_thread::sleep_for(2s);  // several optimistic renewals
  json lease = admin->get(kLeases, ns, "valley-operator");
  ASSERT_EQ(lease["spec"].value("holderIdentity", ""), "op-a");
  auto c = unlimited_admin();
  for (int attempt = 0;; ++attempt) {
    lease = c->get(kLeases, ns, "valley-operator");
    lease["spec"]["holderIdentity"] = "intruder";
    lease["spec"]["leaseDurationSeconds"] = 60;
    lease["spec"]["renewTime"] = kube::format_micro_time(std::chrono::system_clock::now());
    try {
      c->update(kLeases, lease);
      break;
    } catch (const kube::KubeError& e) {
      ASSERT_TRUE(e.http_status() == 409 && attempt < 20) << e.what();  // op-a renewed meanwhile
    }
  }
  ASSERT_TRUE(eventually([&] { return a.process->output().find("lease taken by intruder") != std::string::npos; }, 10s))
      << a.process->output();
  EXPECT_EQ(admin->get(kLeases, ns, "valley-operator")["spec"].value("holderIdentity", ""), "intruder");
  a.process->signal(SIGTERM);
  a.process->wait(10s);
}

TEST_F(LeaderElection, OrderlyShutdownReleasesTheLeaseForAFastHandover) {
  auto a = start_operator(ns, "op-a");
  ASSERT_TRUE(eventually([&] { return leads(a); }, 20s));
  auto b = start_operator(ns, "op-b");
  std::this_thread::sleep_for(1s);
  ASSERT_FALSE(leads(b));
  auto stopped_at = std::chrono::steady_clock::now();
  a.process->signal(SIGTERM);
  EXPECT_EQ(a.process->wait(10s), 0);
  EXPECT_NE(a.process->output().find("released lease"), std::string::npos);
  ASSERT_TRUE(eventually([&] { return leads(b); }, 10s));
  auto handover = std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped_at).count();
  std::cout << "[figure] leader handover after SIGTERM: " << handover << " s (lease duration 4 s)\n";
  RecordProperty("handover_seconds", std::to_string(handover));
  b.process->signal(SIGTERM);
  EXPECT_EQ(b.process->wait(10s), 0);
}

}  // namespace
}  // namespace valley::e2e
