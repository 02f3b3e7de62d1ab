#include "operator/kube/expectations.h"

#include "operator/kube/json_fields.h"

namespace valley::kube {

void CreationExpectations::expect(const std::string& id, const std::string& uid, Clock::time_point now) {
  std::lock_guard lock(mu_);
  expected_[id] = Expected{uid, now};
}

void CreationExpectations::observed(const std::string& id, const std::string& uid) {
  std::lock_guard lock(mu_);
  auto it = expected_.find(id);
  // An event of an older incarnation of the name (the pod this one replaces) meets nothing.
  if (it != expected_.end() && it->second.uid == uid) expected_.erase(it);
}

bool CreationExpectations::pending(const std::string& id, Clock::time_point now) {
  std::lock_guard lock(mu_);
  auto it = expected_.find(id);
  if (it == expected_.end()) return false;
  if (now - it->second.at >= ttl_) {
    expected_.erase(it);
    return false;
  }
  return true;
}

size_t CreationExpectations::size() const {
  std::lock_guard lock(mu_);
  return expected_.size();
}

namespace {
std::string version_of(const nlohmann::json& object) { return string_at(object_at(object, "metadata"), "resourceVersion"); }
}  // namespace

void WrittenObjects::wrote(const std::string& key, const json& based_on, json written) {
  auto object = std::make_shared<const json>(std::move(written));
  std::lock_guard lock(mu_);
  Written& w = written_[key];
  if (const std::string old = version_of(based_on); !old.empty()) w.replaced.insert(old);
  w.object = std::move(object);
}

WrittenObjects::Ptr WrittenObjects::latest(const std::string& key, const Ptr& cached) {
  std::lock_guard lock(mu_);
  auto it = written_.find(key);
  if (it == written_.end()) return cached;
  if (it->second.replaced.count(version_of(*cached))) return it->second.object;
  written_.erase(it);  // the cache caught up (or someone else wrote since): it is the truth again
  return cached;
}

void WrittenObjects::forget(const std::string& key) {
  std::lock_guard lock(mu_);
  written_.erase(key);
}

size_t WrittenObjects::size() const {
  std::lock_guard lock(mu_);
  return written_.size();
}

}  // namespace valley::kube
