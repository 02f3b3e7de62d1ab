// Leader election on a coordination.k8s.io/v1 Lease, with client-go's algorithm and defaults
// (lease 15s, renew deadline 10s, retry 2s): a candidate takes the lease only when its holder has
// not renewed it for a lease duration *as observed on the candidate's own clock* (so clock skew
// between machines does not matter); the leader renews every retry period and steps down when it
// could not renew for the renew deadline; on an orderly stop it releases the lease so a successor
// takes over at once. Updates are conditional on resourceVersion, so two candidates can never both
// win the same round.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>

#include "operator/kube/client.h"

namespace valley::kube {

struct LeaderElectionConfig {
  std::string lease_namespace;
  std::string lease_name;
  std::string identity;  // unique per process, e.g. hostname_uuid
  std::chrono::milliseconds lease_duration{15000};
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry_period{2000};
  bool release_on_stop = true;
};

struct LeaderCallbacks {
  std::function<void()> on_started_leading;  // called on the elector's thread; must not block
  std::function<void()> on_stopped_leading;
  std::function<void(const std::string& identity)> on_new_leader;
};

class LeaderElector {
 public:
  LeaderElector(Client& client, LeaderElectionConfig config, LeaderCallbacks callbacks);

  // Campaigns until it leads, then renews until it loses the lease or *stop is set. Returns after
  // on_stopped_leading (if it ever led). Throws std::invalid_argument for inconsistent timings.
  void run(const std::atomic<bool>& stop);
  bool is_leader() const { return leader_.load(); }
  // Whether this replica may still act as the leader: it leads, and its last successful renewal
  // began less than the renew deadline ago (others take the lease only a lease duration after
  // they saw that renewal, and the renew deadline is shorter). Any thread.
  bool lease_valid() const;

 private:
  bool try_acquire_or_renew();
  void observe_own_write(const json& written, const std::string& renew_time, std::chrono::steady_clock::time_point now);
  void release();
  bool sleep(const std::atomic<bool>& stop, std::chrono::milliseconds d);

  Client& client_;
  LeaderElectionConfig config_;
  LeaderCallbacks callbacks_;
  std::atomic<bool> leader_{false};
  std::atomic<int64_t> renewed_at_{0};  // steady_clock nanoseconds: when the last successful attempt began
  // What the lease looked like last time and when (on our clock) we first saw it so.
  std::string observed_holder_, observed_renew_, observed_rv_;
  std::chrono::steady_clock::time_point observed_time_{};
  std::string reported_leader_;
  json own_lease_;  // the lease as our last write left it (null until then, or after a failed renewal)
};

// A default identity: hostname plus a random suffix, so two processes on one host differ.
std::string default_identity();

}  // namespace valley::kube
