#include "operator/kube/leader_election.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <random>
#include <stdexcept>
#include <thread>

#include "operator/kube/error.h"
#include "operator/kube/remote_clock.h"
#include "operator/kube/timefmt.h"

namespace valley::kube {

std::string default_identity() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  std::random_device rd;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "%08x", rd());
  return std::string(host) + "_" + suffix;
}

LeaderElector::LeaderElector(Client& client, LeaderElectionConfig config, LeaderCallbacks callbacks)
    : client_(client), config_(std::move(config)), callbacks_(std::move(callbacks)) {
  if (config_.lease_duration <= config_.renew_deadline)
    throw std::invalid_argument("leader election: lease duration must be greater than the renew deadline");
  if (config_.renew_deadline.count() <= config_.retry_period.count() * 1.2)
    throw std::invalid_argument("leader election: renew deadline must exceed 1.2 x the retry period");
  if (config_.identity.empty()) throw std::invalid_argument("leader election: identity is empty");
}

bool LeaderElector::sleep(const std::atomic<bool>& stop, std::chrono::milliseconds d) {
  auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
    if (stop.load()) return false;
    std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(std::chrono::milliseconds(50), d));
  }
  return !stop.load();
}

bool LeaderElector::try_acquire_or_renew() {
  const auto now_wall = cluster_clock().now();
  const auto now = std::chrono::steady_clock::now();
  const std::string now_text = format_micro_time(now_wall);
  const auto lease_seconds = std::chrono::duration_cast<std::chrono::seconds>(config_.lease_duration).count();

  // The leader's renewal, optimistically: the lease as we last wrote it, with a new renewTime,
  // conditional on the resourceVersion we wrote (client-go does the same). One request a renewal
  // instead of a read and a write; a conflict (someone else wrote it) goes the long way below.
  if (!own_lease_.is_null() && observed_holder_ == config_.identity) {
    json lease = own_lease_;
    lease["spec"]["renewTime"] = now_text;
    try {
      observe_own_write(client_.update(resources::kLeases, lease), now_text, now);
      return true;
    } catch (const KubeError& e) {
      own_lease_ = nullptr;
      spdlog::debug("leader election: optimistic renewal failed ({}); reading the lease", e.what());
    }
  }

  json lease;
  try {
    lease = client_.get(resources::kLeases, config_.lease_namespace, config_.lease_name);
  } catch (const KubeError& e) {
    if (e.http_status() != 404) throw;
    json fresh = {{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", config_.lease_name}, {"namespace", config_.lease_namespace}}},
                  {"spec",
                   {{"holderIdentity", config_.identity},
                    {"leaseDurationSeconds", lease_seconds},
                    {"acquireTime", now_text},
                    {"renewTime", now_text},
                    {"leaseTransitions", 0}}}};
    try {
      observe_own_write(client_.create(resources::kLeases, config_.lease_namespace, fresh), now_text, now);
      return true;
    } catch (const KubeError& ce) {
      if (ce.http_status() == 409) return false;  // another candidate created it first
      throw;
    }
  }

  json& spec = lease["spec"];
  std::string holder = spec.value("holderIdentity", "");
  std::string renew = spec.value("renewTime", "");
  std::string rv = resource_version_of(lease);
  if (holder != observed_holder_ || renew != observed_renew_ || rv != observed_rv_) {
    observed_holder_ = holder;
    observed_renew_ = renew;
    observed_rv_ = rv;
    observed_time_ = now;
  }
  // The holder's own lease duration counts, not ours (a leader with a longer one keeps it longer).
  auto holder_duration = std::chrono::seconds(spec.value("leaseDurationSeconds", lease_seconds));
  if (!holder.empty() && holder != config_.identity && observed_time_ + holder_duration > now) return false;

  if (holder == config_.identity) {
    spec["renewTime"] = now_text;
  } else {
    spec["holderIdentity"] = config_.identity;
    spec["acquireTime"] = now_text;
    spec["renewTime"] = now_text;
    spec["leaseTransitions"] = spec.value("leaseTransitions", 0) + 1;
  }
  spec["leaseDurationSeconds"] = lease_seconds;
  try {
    observe_own_write(client_.update(resources::kLeases, lease), now_text, now);  // conditional on resourceVersion
    return true;
  } catch (const KubeError& e) {
    if (e.http_status() == 409) return false;  // someone else wrote it meanwhile
    throw;
  }
}

void LeaderElector::observe_own_write(const json& written, const std::string& renew_time,
                                      std::chrono::steady_clock::time_point now) {
  observed_holder_ = config_.identity;
  observed_renew_ = renew_time;
  observed_rv_ = resource_version_of(written);
  observed_time_ = now;
  own_lease_ = written;
}

void LeaderElector::release() {
  try {
    json lease = client_.get(resources::kLeases, config_.lease_namespace, config_.lease_name);
    if (lease["spec"].value("holderIdentity", "") != config_.identity) return;
    lease["spec"]["holderIdentity"] = "";
    lease["spec"]["leaseDurationSeconds"] = 1;
    lease["spec"]["renewTime"] = format_micro_time(cluster_clock().now());
    client_.update(resources::kLeases, lease);
    own_lease_ = nullptr;
    spdlog::info("leader election: released lease {}/{}", config_.lease_namespace, config_.lease_name);
  } catch (const KubeError& e) {
    spdlog::warn("leader election: could not release the lease: {}", e.what());
  }
}

bool LeaderElector::lease_valid() const {
  const auto renewed = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(renewed_at_.load()));
  return leader_.load() && std::chrono::steady_clock::now() - renewed < config_.renew_deadline;
}

void LeaderElector::run(const std::atomic<bool>& stop) {
  static thread_local std::mt19937 rng(std::random_device{}());
  auto jittered = [&](std::chrono::milliseconds d) {
    std::uniform_real_distribution<double> extra(0.0, 0.2);
    return std::chrono::milliseconds(static_cast<int64_t>(static_cast<double>(d.count()) * (1.0 + extra(rng))));
  };
  auto attempt = [&]() {
    const auto began = std::chrono::steady_clock::now();
    try {
      const bool held = try_acquire_or_renew();
      if (held) renewed_at_ = std::chrono::duration_cast<std::chrono::nanoseconds>(began.time_since_epoch()).count();
      return held;
    } catch (const KubeError& e) {
      spdlog::warn("leader election: {}", e.what());
      return false;
    } catch (const std::exception& e) {  // an answer it cannot read: not renewed, as a failed call
      spdlog::error("leader election: {}", e.what());
      return false;
    }
  };
  auto report_leader = [&]() {
    if (observed_holder_ != reported_leader_ && !observed_holder_.empty()) {
      reported_leader_ = observed_holder_;
      if (callbacks_.on_new_leader) callbacks_.on_new_leader(reported_leader_);
    }
  };

  spdlog::info("leader election: {} campaigning for lease {}/{}", config_.identity, config_.lease_namespace,
               config_.lease_name);
  // Acquire.
  for (;;) {
    if (stop.load()) return;
    bool acquired = attempt();
    report_leader();
    if (acquired) break;
    if (!sleep(stop, jittered(config_.retry_period))) return;
  }
  leader_ = true;
  spdlog::info("leader election: {} became the leader", config_.identity);
  if (callbacks_.on_started_leading) callbacks_.on_started_leading();

  // Renew until stopped or until renewal has failed for the renew deadline.
  auto last_renew = std::chrono::steady_clock::now();
  while (!stop.load()) {
    if (!sleep(stop, config_.retry_period)) break;
    if (attempt()) {
      last_renew = std::chrono::steady_clock::now();
    } else if (std::chrono::steady_clock::now() - last_renew >= config_.renew_deadline) {
      spdlog::error("leader election: {} could not renew the lease within {} ms: stepping down", config_.identity,
                    config_.renew_deadline.count());
      break;
    }
    report_leader();
    if (observed_holder_ != config_.identity && !observed_holder_.empty()) {
      spdlog::error("leader election: lease taken by {}", observed_holder_);
      break;
    }
  }
  leader_ = false;
  if (stop.load() && config_.release_on_stop) release();
  if (callbacks_.on_stopped_leading) callbacks_.on_stopped_leading();
}

}  // namespace valley::kube
