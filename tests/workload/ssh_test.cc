// MPI pods at Pod Security "restricted", as far as this machine shows it without a kubelet (issue
// "Real node" runs them in containers): Valley's SSH key pair laid out as a Secret volume with an
// fsGroup lays it out (files root-owned, mode 0440, the pod's group; the directory group-writable),
// the example image's valley-sshd run by a non-root user on the port Valley renders, and mpirun
// started by that user with the ssh arguments, hostfile and MCA settings Valley renders, launching
// valley-train on two "hosts" through real OpenSSH. Every host name maps to 127.0.0.1 in the ssh
// config, and orte_do_not_resolve keeps OpenMPI from seeing that they are local, so each rank's
// daemon really is started over ssh.
#include <grp.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "controllers/render/render.h"
#include "tests/e2e/support.h"
#include "tests/scratch_dir.h"

namespace valley::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using json = nlohmann::json;

constexpr const char* kUser = "valley-mpi";  // made by this test when absent (the pod's non-root user)

std::string env_of(const json& pod, const std::string& name) {
  for (const auto& e : pod["spec"]["containers"][0]["env"])
    if (e["name"] == name) return e["value"];
  return "";
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
}

TEST(RestrictedSsh, MpirunReachesANonRootSshdWithValleysKeysPortAndHostfile) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: it makes a user and lays out keys as kubelet does";
  ASSERT_TRUE(fs::exists("/usr/sbin/sshd")) << "openssh-server is missing (make deps installs it)";
  if (!::getpwnam(kUser)) {
    e2e::ChildProcess add({"/usr/sbin/useradd", "--create-home", "--shell", "/bin/sh", kUser}, ::testing::TempDir() + "/useradd.log");
    ASSERT_EQ(add.wait(30s), 0) << add.output();
  }
  const passwd* pw = ::getpwnam(kUser);
  ASSERT_NE(pw, nullptr);
  const uid_t uid = pw->pw_uid;
  const gid_t gid = pw->pw_gid;
  const std::string home = pw->pw_dir;

  // The task, rendered for Restricted with that user.
  auto parsed = api::parse_task(json::parse(R"({"metadata":{"name":"job","namespace":"ns","uid":"u"},
    "spec":{"replicas":{"min":2,"max":2},"master":{"image":"l"},"worker":{"image":"w","slotsPerWorker":1},
            "podSecurity":{"level":"Restricted","runAsUser":)" + std::to_string(uid) + "}}}"));
  ASSERT_TRUE(parsed.spec) << parsed.errors[0];
  const json pod = render::worker_pod(*parsed.spec, 0, {2, 1}, render::default_placement(*parsed.spec));
  ASSERT_EQ(pod["spec"]["securityContext"]["runAsUser"], uid);

  const ScratchDir scratch("valley-ssh");
  const fs::path dir = scratch.path();
  fs::create_directories(dir / "keys");
  // The Secret volume: Valley's key pair under the names render gives them; kubelet makes the files
  // root's with the volume's defaultMode and the fsGroup as their group, the directory setgid.
  const auto keys = render::generate_ssh_key_pair("job");
  write(dir / "keys/id_ecdsa", keys.private_pem);
  write(dir / "keys/id_ecdsa.pub", keys.public_openssh);
  write(dir / "keys/authorized_keys", keys.public_openssh);
  int mode = 0;
  for (const auto& v : pod["spec"]["volumes"])
    if (v["name"] == "valley-ssh") mode = v["secret"]["defaultMode"];
  ASSERT_EQ(mode, 0440);
  for (const char* f : {"id_ecdsa", "id_ecdsa.pub", "authorized_keys"}) {
    ASSERT_EQ(::chown((dir / "keys" / f).c_str(), 0, gid), 0);
    fs::permissions(dir / "keys" / f, static_cast<fs::perms>(mode));
  }
  ASSERT_EQ(::chown((dir / "keys").c_str(), 0, gid), 0);
  fs::permissions(dir / "keys", static_cast<fs::perms>(02775));
  ASSERT_EQ(::chown(dir.c_str(), uid, gid), 0);  // the job's scratch: the user writes its output here

  std::string rsh_args = env_of(pod, "OMPI_MCA_plm_rsh_args");
  ASSERT_NE(rsh_args.find("-p 2222"), std::string::npos) << rsh_args;
  ASSERT_EQ(env_of(pod, "VALLEY_SSH_DIR"), "/etc/valley/ssh");
  ASSERT_EQ(env_of(pod, "VALLEY_SSH_PORT"), "2222");
  // Pods each have their own /tmp; here both "hosts" share one, and two OpenMPI daemons making the
  // same session directory at once race (mkdir: File exists). So each host's daemon gets its own
  // tmpdir, passed through the AcceptEnv valley-sshd allows.
  std::string ssh_config;
  for (int host = 0; host < 2; ++host) {
    const fs::path tmp = dir / ("tmp-" + std::to_string(host));
    fs::create_directories(tmp);
    ASSERT_EQ(::chown(tmp.c_str(), uid, gid), 0);
    ssh_config += "Host job-worker-" + std::to_string(host) + ".*\n  SetEnv OMPI_MCA_orte_tmpdir_base=" + tmp.string() + "\n";
  }
  write(dir / "ssh_config", ssh_config + "Host *\n  HostName 127.0.0.1\n  BatchMode yes\n");
  write(dir / "hostfile", render::hostfile(*parsed.spec, 2));
  const std::vector<std::string> as_user{"/usr/bin/setpriv", "--reuid=" + std::to_string(uid), "--regid=" + std::to_string(gid), "--init-groups",
                                         "/usr/bin/env", "HOME=" + home, "TMPDIR=/tmp"};

  // valley-sshd on a port free here; another process may take it between the pick and sshd's bind,
  // so a failed bind on 127.0.0.1's family is retried on another port.
  std::unique_ptr<e2e::ChildProcess> sshd_process;
  std::string port;
  for (int attempt = 0; attempt < 5 && !sshd_process; ++attempt) {
    port = std::to_string(e2e::free_loopback_port());
    std::vector<std::string> sshd_argv = as_user;
    for (const auto& a : {"VALLEY_SSH_PORT=" + port, "VALLEY_SSH_DIR=" + (dir / "keys").string(),
                          std::string(VALLEY_SOURCE_DIR) + "/deploy/examples/train/valley-sshd"})
      sshd_argv.push_back(a);
    auto started = std::make_unique<e2e::ChildProcess>(sshd_argv, (dir / ("sshd-" + std::to_string(attempt) + ".log")).string());
    bool listening = false;
    ASSERT_TRUE(e2e::eventually([&] {
      const std::string out = started->output();
      listening = out.find("Server listening on 0.0.0.0") != std::string::npos;
      return listening || out.find("Bind to port " + port + " on 0.0.0.0 failed") != std::string::npos;
    }, 20s)) << started->output();
    if (listening) sshd_process = std::move(started);
  }
  ASSERT_TRUE(sshd_process) << "valley-sshd found no free port in 5 tries";
  e2e::ChildProcess& sshd = *sshd_process;
  // What Valley puts in the pod, moved from /etc/valley/ssh to this directory and from port 2222 to
  // the one sshd listens on.
  replace_all(rsh_args, "/etc/valley/ssh", (dir / "keys").string());
  replace_all(rsh_args, "-p 2222", "-p " + port);

  std::vector<std::string> mpirun_argv = as_user;
  for (const auto& a : {"OMPI_MCA_plm_rsh_args=-F " + (dir / "ssh_config").string() + " " + rsh_args,
                        "OMPI_MCA_orte_default_hostfile=" + (dir / "hostfile").string(),
                        "OMPI_MCA_orte_keep_fqdn_hostnames=" + env_of(pod, "OMPI_MCA_orte_keep_fqdn_hostnames"),
                        "OMPI_MCA_rtc_hwloc_vmhole=" + env_of(pod, "OMPI_MCA_rtc_hwloc_vmhole"),
                        std::string("OMPI_MCA_orte_do_not_resolve=1"), std::string("/usr/bin/mpirun"), std::string("-np"), std::string("2"),
                        e2e::binary("valley-train"), std::string("--steps"), std::string("40"), std::string("--output"),
                        (dir / "weights.txt").string()})
    mpirun_argv.push_back(a);
  e2e::ChildProcess mpirun(mpirun_argv, (dir / "mpirun.log").string());
  const int rc = mpirun.wait(120s);
  const std::string sshd_log = sshd.output();
  sshd.signal(SIGTERM);
  sshd.wait(10s);
  ASSERT_EQ(rc, 0) << mpirun.output() << "\nsshd:\n" << sshd_log;
  EXPECT_TRUE(fs::exists(dir / "weights.txt")) << mpirun.output();
  // Both "hosts" of the hostfile were reached through sshd, as the pod's user, with the task's key.
  size_t logins = 0;
  for (size_t at = sshd_log.find("Accepted publickey for " + std::string(kUser)); at != std::string::npos;
       at = sshd_log.find("Accepted publickey for " + std::string(kUser), at + 1))
    ++logins;
  EXPECT_GE(logins, 2u) << sshd_log;
}

}  // namespace
}  // namespace valley::testing
