#include "tests/e2e/support.h"

#include <algorithm>
#include <fstream>
#include <mutex>

#include "operator/kube/base64.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <cstdlib>

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
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

int free_loopback_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(s);
  return ntohs(a.sin_port);
}

std::string admin_kubeconfig_path() {
  if (const char* p = std::getenv("VALLEY_KUBECONFIG"); p != nullptr && *p != '\0') return p;
  return std::string(VALLEY_SOURCE_DIR) + "/.valley/kubeconfig";
}

std::string component_kubeconfig_path(const std::string& component) {
  return std::string(VALLEY_SOURCE_DIR) + "/.valley/pki/" + component + ".kubeconfig";
}

kube::ClusterConfig admin_config() { return kube::load_kubeconfig(admin_kubeconfig_path()); }

std::string e2e_fleet() {
  // ctest's resource allocation: CTEST_RESOURCE_GROUP_<i> names a group's type, and
  // CTEST_RESOURCE_GROUP_<i>_FLEETS what it was given, "id:e2e_1,slots:1" (ctest's ids take no
  // '-': fleet e2e-1).
  const char* count = std::getenv("CTEST_RESOURCE_GROUP_COUNT");
  for (int i = 0; count != nullptr && i < std::atoi(count); ++i) {
    const std::string group = "CTEST_RESOURCE_GROUP_" + std::to_string(i);
    const char* type = std::getenv(group.c_str());
    const char* given = std::getenv((group + "_FLEETS").c_str());
    if (type == nullptr || std::string(type) != "fleets" || given == nullptr) continue;
    const std::string g = given;
    const size_t from = g.find("id:");
    if (from == std::string::npos) continue;
    std::string fleet = g.substr(from + 3, g.find(',', from) - from - 3);
    std::replace(fleet.begin(), fleet.end(), '_', '-');
    return fleet;
  }
  return "";
}

std::string fleet_node_selector() {
  const std::string fleet = e2e_fleet();
  return fleet.empty() ? "!valley.dev/fleet" : "valley.dev/fleet=" + fleet;
}

std::string fleet_node(const std::string& name) {
  const std::string fleet = e2e_fleet();
  return fleet.empty() ? name : fleet + "-" + name;
}

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
  ASSERT_NO_THROW(create_namespace_for_operators(*admin, ns));
}

void bind_role(kube::Client& admin, const std::string& ns, const std::string& name, const std::string& role_kind, const std::string& role,
               const std::string& account_ns, const std::string& account) {
  admin.create("/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns + "/rolebindings",
               {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                {"kind", "RoleBinding"},
                {"metadata", {{"name", name}}},
                {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", role_kind}, {"name", role}}},
                {"subjects", {{{"kind", "ServiceAccount"}, {"name", account}, {"namespace", account_ns}}}}});
}

void create_namespace_for_operators(kube::Client& admin, const std::string& ns) {
  admin.create("/api/v1/namespaces", {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
  // Operators started by the test keep their leader Lease in this namespace: the deploy/ RBAC's
  // leader-election role, bound here as deploy/ binds it in valley-system.
  bind_role(admin, ns, "valley-leader-election", "ClusterRole", "valley-leader-election", "valley-system", "valley-operator");
  // Pods cannot be created before kube-controller-manager has made the namespace's default
  // ServiceAccount.
  bool ready = eventually([&] {
    try {
      admin.get(kube::resources::kServiceAccounts, ns, "default");
      return true;
    } catch (const kube::KubeError&) {
      return false;
    }
  }, 30s);
  if (!ready) throw std::runtime_error("no default ServiceAccount in " + ns);
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
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int out = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  int err_pipe[2];
  if (out < 0 || in < 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) throw std::runtime_error("cannot set up " + argv[0]);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ == 0) {
    // Only async-signal-safe calls until exec. The child dies with the test process (a killed or
    // crashed test must not leave operators behind that would reconcile the next test's tasks).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(out, 2);
    ::execv(args[0], args.data());
    int e = errno;
    (void)!::write(err_pipe[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(out);
  ::close(in);
  ::close(err_pipe[1]);
  int child_errno = 0;
  ssize_t n = pid_ > 0 ? ::read(err_pipe[0], &child_errno, sizeof child_errno) : 0;
  ::close(err_pipe[0]);
  if (pid_ < 0) throw std::runtime_error("cannot fork for " + argv[0]);
  if (n == sizeof child_errno) {
    ::waitpid(pid_, nullptr, 0);
    reaped_ = true;
    throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(child_errno));
  }
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

std::string service_account_kubeconfig(const std::string& ns, const std::string& account) {
  kube::Client admin(admin_config());
  // A token of the ServiceAccount (TokenRequest), as the kubelet would mount it.
  json request = {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "TokenRequest"}, {"spec", {{"expirationSeconds", 86400}}}};
  json token;
  bool ok = eventually([&] {
    try {
      token = admin.create("/api/v1/namespaces/" + ns + "/serviceaccounts/" + account + "/token", request);
      return true;
    } catch (const kube::KubeError&) {
      return false;
    }
  }, 30s);
  if (!ok) throw std::runtime_error("no token for " + ns + "/" + account);
  const auto config = admin_config();
  // Of this process: test processes run side by side (the e2e shards, a second cluster's suite),
  // and one rewriting a shared file while another reads it would hand over half a kubeconfig.
  const std::string path = ::testing::TempDir() + "/" + ns + "-" + account + "-" + std::to_string(::getpid()) + "-sa.kubeconfig";
  std::ofstream out(path);
  out << "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: " << config.server
      << "\n    certificate-authority-data: " << kube::base64_encode(config.ca_pem) << "\nusers:\n- name: " << account << "\n  user:\n"
      << "    token: " << token["status"]["token"].get<std::string>() << "\ncontexts:\n- name: " << account
      << "\n  context: {cluster: local, user: " << account << ", namespace: " << ns << "}\n"
      << "current-context: " << account << "\n";
  return path;
}

int kubectl(const std::vector<std::string>& args, std::string* out) {
  std::vector<std::string> argv{VALLEY_SOURCE_DIR "/.valley/bin/kubectl", "--kubeconfig=" + admin_kubeconfig_path(),
                                "--cache-dir=" + ::testing::TempDir() + "/kubectl-cache"};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess p(argv, ::testing::TempDir() + "/kubectl.log");
  const int rc = p.wait(60s);
  if (out) *out = p.output();
  return rc;
}

std::string operator_kubeconfig_path() {
  if (const char* admin = std::getenv("VALLEY_E2E_OPERATOR_AS_ADMIN"); admin && std::string(admin) == "1") return admin_kubeconfig_path();
  static std::once_flag once;
  static std::string path;
  std::call_once(once, [] {
    // deploy/'s Namespace and RBAC, as an installation would apply them. Test processes start side
    // by side and apply them at once: one may create an object another found missing a moment
    // before (AlreadyExists), which the next try finds and leaves unchanged.
    for (int attempt = 1;; ++attempt) {
      ChildProcess apply({std::string(VALLEY_SOURCE_DIR) + "/.valley/bin/kubectl", "--kubeconfig=" + admin_kubeconfig_path(), "apply",
                          "-f", std::string(VALLEY_SOURCE_DIR) + "/deploy/base/namespace.yaml", "-f",
                          std::string(VALLEY_SOURCE_DIR) + "/deploy/base/rbac.yaml"},
                         ::testing::TempDir() + "/apply-rbac.log");
      if (apply.wait(60s) == 0) break;
      if (attempt == 3) throw std::runtime_error("applying deploy/base/rbac.yaml failed: " + apply.output());
    }
    path = service_account_kubeconfig("valley-system", "valley-operator");
  });
  return path;
}

std::vector<std::string> operator_argv(const std::string& ns, const std::vector<std::string>& extra) {
  // The shipped lease timings (15 s, renewed within 10 s): the suites beside a test can hold the
  // API server several seconds, and a shorter deadline makes the operator step down, by design, in
  // the middle of what the test looks at. A test that kills its operator waits out the lease, as a
  // replacement pod would. The tests of leader election itself pass shorter ones and run alone.
  std::vector<std::string> argv = {binary("valley-operator"), "--kubeconfig=" + operator_kubeconfig_path(),
                                   "--leader-elect-namespace=" + ns,
                                   // Only the test's own tasks, planned only on its fleet: other
                                   // tests run beside it (a test of several namespaces passes
                                   // --namespace= and runs alone).
                                   "--namespace=" + ns, "--node-selector=" + fleet_node_selector(),
                                   // Several operators run at once in some tests: each on a free port.
                                   "--http-bind-address=127.0.0.1:0",
                                   // What a failed test prints of the operator's log says what it did.
                                   "--log-level=debug"};
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
