// The chaos campaign's operator replicas: two under leader election, each start a new identity as
// a new pod would get. Each runs one of two builds (the current one, or the previous release's for
// the upgrade faults) and, when libfaketime is installed, its wall clock behind an offset the
// campaign steps (the clock faults: an NTP correction, a VM resumed); its steady clock is untouched,
// as on a real host.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/e2e/support.h"

namespace valley::chaos {

struct ReplicaSet {
  std::string ns;
  std::string kubeconfig;               // the operators' (through the campaign's proxy)
  std::string logs;                     // a directory
  std::vector<std::string> flags;       // beyond e2e::operator_argv's
  std::string previous_binary;          // empty: no upgrade faults
  std::string faketime_library;         // empty: no clock faults
};

class Replicas {
 public:
  using Clock = std::chrono::steady_clock;
  using Log = std::function<void(const std::string&)>;

  Replicas(ReplicaSet set, Log log);
  ~Replicas();

  void start(bool previous_build);
  // kill -9 of the replica running as `identity` (the Lease's holder); it comes back after
  // `restart_after`, on the build it ran. False when no replica runs as `identity`.
  bool kill(const std::string& identity, std::chrono::milliseconds restart_after);
  // Restarts replicas that were killed (when due) or exited by themselves (counted: a finding).
  void tend();
  // Rolling replacement onto a build, as a Deployment's rollout with maxSurge 1: for each replica,
  // a new process starts, campaigns for `overlap`, then the old one gets SIGTERM and its grace.
  void roll(bool previous_build, std::chrono::milliseconds overlap, const std::function<void()>& meanwhile);
  // Sets the wall-clock offset of the replica running as `identity` (absolute, from the real
  // time); false when clock faults are off or no replica of the current build runs as it. The
  // previous release is not clock-tolerant (it prices by this host's clock): a rollout onto it
  // sets its hosts' clocks right first, and its replicas' clocks are never stepped.
  bool step_clock(const std::string& identity, std::chrono::seconds offset);
  void stop();

  int exited_on_their_own() const { return exited_; }
  bool clock_faults() const { return !set_.faketime_library.empty(); }
  std::string build_name(bool previous_build) const;

 private:
  struct Replica {
    std::string name, identity;
    int starts = 0;
    bool previous_build = false;
    std::unique_ptr<e2e::ChildProcess> process;
    std::optional<Clock::time_point> restart_at;
    std::string clock_file;
  };
  void launch(Replica& r);
  void write_offset(const Replica& r, std::chrono::seconds offset);
  std::vector<std::string> argv(const Replica& r) const;

  ReplicaSet set_;
  Log log_;
  Replica replicas_[2];
  int exited_ = 0;
};

// libfaketime's preload library when installed, else "".
std::string find_faketime_library();

}  // namespace valley::chaos
