// Helpers for end-to-end tests against the local control plane (tests/cluster/cluster.sh):
// the admin client, a fresh namespace per test that is deleted afterwards, polling with a deadline,
// and child processes for the project's own binaries.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "operator/kube/client.h"
#include "operator/kube/informer.h"

#include <mutex>
#include <set>

namespace valley::e2e {

using json = nlohmann::json;
using namespace std::chrono_literals;

// $VALLEY_KUBECONFIG, else <repo>/.valley/kubeconfig.
std::string admin_kubeconfig_path();
// The kubeconfig cluster.sh writes for a component of the local cluster (kwok, karpenter, ...):
// <repo>/.valley/pki/<component>.kubeconfig, with that component's own credentials.
std::string component_kubeconfig_path(const std::string& component);
kube::ClusterConfig admin_config();

// The e2e suite runs in parallel shards (make e2e: ctest -j with tests/e2e/fleets.json): ctest gives
// each test one fleet, a copy of the profile's kwok nodes (cluster.sh fleets), and the test's
// operators plan only there. "" outside ctest's resource allocation: the cluster's own nodes.
std::string e2e_fleet();
// A label selector of the test's fleet's nodes (what its operators get as --node-selector).
std::string fleet_node_selector();
// The name in the test's fleet of the profile's node `name` (e.g. a100-od-0).
std::string fleet_node(const std::string& name);

// The Kubernetes version pinned in tests/cluster/k8s/go.mod, e.g. "v1.34.4".
std::string pinned_kubernetes_version();

// A TCP port on 127.0.0.1 free at the time of the call (the kernel's pick, so outside the ports
// other tests chose); a server started on it should still check its bind succeeded.
int free_loopback_port();

// Polls `done` every 100 ms until it returns true or `timeout` passes; returns the last result.
bool eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout);

// A namespace in which operators started by tests may hold their leader Lease (deploy/'s
// leader-election role bound there) and pods can be created (its default ServiceAccount exists).
void create_namespace_for_operators(kube::Client& admin, const std::string& ns);
// RoleBinding `name` in `ns`: `role_kind` ("Role" or "ClusterRole") `role` to ServiceAccount
// account_ns/account.
void bind_role(kube::Client& admin, const std::string& ns, const std::string& name, const std::string& role_kind, const std::string& role,
               const std::string& account_ns, const std::string& account);
// A test fixture with an admin client and its own namespace, deleted in TearDown.
class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  std::unique_ptr<kube::Client> admin;
  std::string ns;
};

// A child process with stdout and stderr going to a file; killed (SIGKILL) if still running at
// destruction so a failed test leaves nothing behind.
class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, const std::string& log_path);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  void signal(int sig);
  // Waits for exit; returns the exit status (128+N if killed by signal N), or -1 on timeout.
  int wait(std::chrono::milliseconds timeout);
  std::string output() const;
  int pid() const { return pid_; }

 private:
  int pid_ = -1;
  bool reaped_ = false;
  std::string log_path_;
};

std::string binary(const std::string& name);  // <build>/bin/<name>

// The kubeconfig the tests' operators use: a token of the valley-operator ServiceAccount with
// deploy/base/rbac.yaml applied (so every e2e test also proves those permissions suffice);
// VALLEY_E2E_OPERATOR_AS_ADMIN=1 uses the admin kubeconfig instead.
std::string operator_kubeconfig_path();
// A kubeconfig (written under the test's temp dir) that authenticates as ServiceAccount ns/account
// with a token from the TokenRequest API.
std::string service_account_kubeconfig(const std::string& ns, const std::string& account);

// The operator's command line for tests: the ServiceAccount kubeconfig above, its Lease in `ns` with short timings
// (4s lease, 3s renew deadline, 0.5s retry), the tasks of `ns` only on the test's fleet, plus `extra` flags
// (a later flag overrides an earlier one).
std::vector<std::string> operator_argv(const std::string& ns, const std::vector<std::string>& extra = {});

// kubectl as the admin, with a discovery cache of the test's own (one left from before a change of
// the CRDs would make it prefer the version preferred then); its exit status, its output in *out.
int kubectl(const std::vector<std::string>& args, std::string* out = nullptr);

// Runs tests/cluster/cluster.sh with `args` (e.g. {"restart", "apiserver"}); returns its exit status.
int cluster_sh(const std::vector<std::string>& args, std::chrono::seconds timeout = std::chrono::seconds(120));

// An admin client without the client-side rate limit (tests create objects in bulk).
std::unique_ptr<kube::Client> unlimited_admin();

json config_map(const std::string& name, const json& labels = json::object());

// Waits until a new namespace gets its default ServiceAccount, i.e. pods can be created again.
bool wait_until_cluster_serves_pods(std::chrono::seconds timeout);

// Records what an informer delivers, for comparison with what was written.
struct Recorder {
  std::mutex mu;
  std::set<std::string> added, deleted;
  int updates = 0;
  kube::InformerHandlers handlers() {
    return {[this](const kube::ObjectPtr& o) {
              std::lock_guard l(mu);
              added.insert((*o)["metadata"]["name"].get<std::string>());
            },
            [this](const kube::ObjectPtr&, const kube::ObjectPtr&) {
              std::lock_guard l(mu);
              ++updates;
            },
            [this](const kube::ObjectPtr& o) {
              std::lock_guard l(mu);
              deleted.insert((*o)["metadata"]["name"].get<std::string>());
            }};
  }
  size_t added_count() {
    std::lock_guard l(mu);
    return added.size();
  }
};



// An informer over the ConfigMaps labelled watched=yes in `ns`, reporting to `recorder`, started
// and synced (the test fails if it does not sync).
std::unique_ptr<kube::Informer> watched_config_maps(kube::Client& client, const std::string& ns, Recorder& recorder);

}  // namespace valley::e2e
