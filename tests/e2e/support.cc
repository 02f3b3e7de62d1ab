#include "tests/e2e/support.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <thread>

#include "operator/kube/error.h"

extern char** environ;

namespace valley::e2e {

std::string admin_kubeconfig_path() {
  if (const char* p = std::getenv("VALLEY_KUBECONFIG"); p != nullptr && *p != '\0') return p;
  return std::string(VALLEY_SOURCE_DIR) + "/.valley/kubeconfig";
}

kube::ClusterConfig admin_config() { return kube::load_kubeconfig(admin_kubeconfig_path()); }

std::string pinned_kubernetes_version() {
  std::ifstream in(std::string(VALLEY_SOURCE_DIR) + "/tests/cluster/k8s/go.mod");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string module, version;
    words >> module >> version;
    if (module == "k8s.io/kubernetes" && !version.empty()) return version;
  }
  return "unknown";
}

bool eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(100ms);
  }
}

void ClusterTest::SetUp() {
  ASSERT_NO_THROW(admin = std::make_unique<kube::Client>(admin_config()))
      << "no local cluster: run `make cluster-up` (kubeconfig " << admin_kubeconfig_path() << ")";
  std::random_device rd;
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string base = std::string(info->name()).substr(0, 30);
  for (auto& c : base) c = std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '-';
  ns = "e2e-" + base + "-" + std::to_string(rd() % 100000);
  admin->create("/api/v1/namespaces", {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
  // Pods cannot be created before kube-controller-manager has made the namespace's default
  // ServiceAccount.
  ASSERT_TRUE(eventually([&] {
    try {
      admin->get(kube::resources::kServiceAccounts, ns, "default");
      return true;
    } catch (const kube::KubeError&) {
      return false;
    }
  }, 30s)) << "no default ServiceAccount in " << ns;
}

bool wait_until_cluster_serves_pods(std::chrono::seconds timeout) {
  auto client = unlimited_admin();
  std::string probe = "e2e-recovery-" + std::to_string(std::random_device{}() % 100000);
  bool ok = eventually([&] {
    try {
      client->create(kube::resources::kNamespaces, "", {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", probe}}}});
    } catch (const kube::KubeError& e) {
      if (e.http_status() != 409) return false;
    }
    try {
      client->get(kube::resources::kServiceAccounts, probe, "default");
      return true;
    } catch (const kube::KubeError&) {
      return false;
    }
  }, timeout);
  try {
    client->remove(kube::resources::kNamespaces, "", probe);
  } catch (const kube::KubeError&) {
  }
  return ok;
}

void ClusterTest::TearDown() {
  if (admin && !ns.empty()) {
    try {
      admin->remove("/api/v1/namespaces/" + ns);
    } catch (const kube::KubeError&) {
    }
  }
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::string& log_path) : log_path_(log_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // The test process may have signals blocked (none here), but the child must start with defaults.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  int rc = posix_spawn(&pid_, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
}

ChildProcess::~ChildProcess() {
  if (!reaped_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

void ChildProcess::signal(int sig) {
  if (!reaped_) ::kill(pid_, sig);
}

int ChildProcess::wait(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
      return -1;
    }
    std::this_thread::sleep_for(50ms);
  }
  return -1;
}

std::string ChildProcess::output() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string binary(const std::string& name) { return std::string(VALLEY_BIN_DIR) + "/" + name; }

std::vector<std::string> operator_argv(const std::string& ns, const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {binary("valley-operator"),           "--kubeconfig=" + admin_kubeconfig_path(),
                                   "--leader-elect-namespace=" + ns,   "--leader-elect-lease-duration=4s",
                                   "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

int cluster_sh(const std::vector<std::string>& args, std::chrono::seconds timeout) {
  std::vector<std::string> argv{"/bin/bash", std::string(VALLEY_SOURCE_DIR) + "/tests/cluster/cluster.sh"};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess p(argv, ::testing::TempDir() + "/cluster-sh.log");
  int rc = p.wait(timeout);
  if (rc != 0) std::cerr << "cluster.sh output:\n" << p.output();
  return rc;
}

std::unique_ptr<kube::Client> unlimited_admin() {
  kube::HttpOptions options;
  options.qps = 0;
  return std::make_unique<kube::Client>(admin_config(), options);
}

json config_map(const std::string& name, const json& labels) {
  return {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}, {"labels", labels}}},
          {"data", {{"k", "v"}}}};
}

}  // namespace valley::e2e

namespace valley::e2e {

std::unique_ptr<kube::Informer> watched_config_maps(kube::Client& client, const std::string& ns, Recorder& recorder) {
  kube::InformerOptions io;
  io.ns = ns;
  io.label_selector = "watched=yes";
  auto informer = std::make_unique<kube::Informer>(client, kube::resources::kConfigMaps, io);
  informer->add_handlers(recorder.handlers());
  informer->start();
  EXPECT_TRUE(informer->wait_for_sync(10s)) << "the informer did not sync";
  return informer;
}

}  // namespace valley::e2e
