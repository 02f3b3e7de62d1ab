#include "tests/chaos/replicas.h"

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace valley::chaos {

using namespace std::chrono_literals;

std::string find_faketime_library() {
  for (const char* p : {"/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1", "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
                        "/usr/lib/faketime/libfaketimeMT.so.1", "/usr/local/lib/faketime/libfaketimeMT.so.1"})
    if (std::filesystem::exists(p)) return p;
  return "";
}

namespace {

// The last lines of a log: why a process exited.
std::string tail(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string l; std::getline(in, l);) all.push_back(l);
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) out += "\n    " + all[i];
  return out;
}

}  // namespace

Replicas::Replicas(ReplicaSet set, Log log) : set_(std::move(set)), log_(std::move(log)) {
  replicas_[0].name = "a";
  replicas_[1].name = "b";
  for (auto& r : replicas_) {
    r.clock_file = set_.logs + "/clock-" + r.name;
    std::ofstream(r.clock_file) << "+0\n";
  }
}

Replicas::~Replicas() { stop(); }

std::string Replicas::build_name(bool previous_build) const { return previous_build ? "the previous release" : "the current build"; }

std::vector<std::string> Replicas::argv(const Replica& r) const {
  std::vector<std::string> out;
  if (clock_faults())
    // libfaketime re-reads the offset file at most once a second; monotonic clocks stay real.
    out = {"/usr/bin/env", "LD_PRELOAD=" + set_.faketime_library, "FAKETIME_TIMESTAMP_FILE=" + r.clock_file,
           "FAKETIME_DONT_FAKE_MONOTONIC=1", "FAKETIME_CACHE_DURATION=1"};
  std::vector<std::string> flags = set_.flags;
  flags.push_back("--leader-elect-identity=" + r.identity);
  std::vector<std::string> operator_argv = e2e::operator_argv(set_.ns, flags);
  if (r.previous_build) {
    operator_argv.front() = set_.previous_binary;
    // Flags the previous release does not know; the campaign runs alone on the cluster's own nodes,
    // so without them it does the same.
    std::erase_if(operator_argv, [](const std::string& a) { return a.rfind("--namespace=", 0) == 0 || a.rfind("--node-selector=", 0) == 0; });
  }
  for (auto& a : operator_argv)
    if (a.rfind("--kubeconfig=", 0) == 0) a = "--kubeconfig=" + set_.kubeconfig;
  out.insert(out.end(), operator_argv.begin(), operator_argv.end());
  return out;
}

void Replicas::launch(Replica& r) {
  r.identity = "chaos-" + r.name + "-" + std::to_string(++r.starts) + (r.previous_build ? "-previous" : "");
  r.process = std::make_unique<e2e::ChildProcess>(argv(r), set_.logs + "/operator-" + r.identity + ".log");
  r.restart_at.reset();
}

void Replicas::start(bool previous_build) {
  for (auto& r : replicas_) {
    r.previous_build = previous_build;
    launch(r);
  }
}

bool Replicas::kill(const std::string& identity, std::chrono::milliseconds restart_after) {
  for (auto& r : replicas_) {
    if (!r.process || r.identity != identity) continue;
    r.process->signal(SIGKILL);
    r.process->wait(5s);
    r.process.reset();
    r.restart_at = Clock::now() + restart_after;
    return true;
  }
  return false;
}

void Replicas::tend() {
  for (auto& r : replicas_) {
    if (r.process && r.process->wait(1ms) != -1) {  // exited by itself: a crash is a finding too
      log_("operator " + r.identity + " exited on its own; its log ends:" + tail(set_.logs + "/operator-" + r.identity + ".log", 5));
      ++exited_;
      r.process.reset();
      r.restart_at = Clock::now();
    }
    if (!r.process && r.restart_at && Clock::now() >= *r.restart_at) launch(r);
  }
}

void Replicas::roll(bool previous_build, std::chrono::milliseconds overlap, const std::function<void()>& meanwhile) {
  for (auto& r : replicas_) {
    if (previous_build) write_offset(r, std::chrono::seconds(0));
    std::unique_ptr<e2e::ChildProcess> old = std::move(r.process);
    const std::string old_identity = r.identity;
    r.previous_build = previous_build;
    launch(r);
    log_("rollout: " + r.identity + " (" + build_name(previous_build) + ") started beside " + old_identity);
    for (auto until = Clock::now() + overlap; Clock::now() < until;) {
      meanwhile();
      std::this_thread::sleep_for(200ms);
    }
    if (old) {
      old->signal(SIGTERM);
      if (old->wait(20s) == -1) {
        log_("rollout: " + old_identity + " did not stop within 20 s of SIGTERM; killed");
        old->signal(SIGKILL);
        old->wait(5s);
      }
      log_("rollout: " + old_identity + " stopped");
    }
  }
}

bool Replicas::step_clock(const std::string& identity, std::chrono::seconds offset) {
  if (!clock_faults()) return false;
  for (auto& r : replicas_) {
    if (!r.process || r.identity != identity || r.previous_build) continue;
    write_offset(r, offset);
    return true;
  }
  return false;
}

void Replicas::write_offset(const Replica& r, std::chrono::seconds offset) {
  std::ostringstream text;
  text << (offset.count() >= 0 ? "+" : "") << offset.count() << "\n";
  const std::string tmp = r.clock_file + ".tmp";
  std::ofstream(tmp) << text.str();
  std::filesystem::rename(tmp, r.clock_file);  // libfaketime never reads a half-written file
}

void Replicas::stop() {
  for (auto& r : replicas_)
    if (r.process) {
      r.process->signal(SIGTERM);
      r.process->wait(15s);
      r.process.reset();
    }
}

}  // namespace valley::chaos
