#include "controllers/task/admission_board.h"

#include "operator/kube/json_fields.h"
#include "operator/kube/remote_clock.h"

namespace valley::task {

std::optional<lifecycle::Admission> AdmissionBoard::admission(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = admissions_.find(key);
  if (it == admissions_.end()) return std::nullopt;
  return it->second;
}

size_t AdmissionBoard::publish(std::vector<std::pair<const std::string*, lifecycle::Admission>>& updates,
                               const std::function<bool(const std::string&)>& planned) {
  size_t admitted = 0;
  std::lock_guard lock(mu_);
  for (auto& [key, a] : updates) admissions_.insert_or_assign(*key, std::move(a));
  std::erase_if(admissions_, [&](const auto& kv) { return !planned(kv.first); });
  for (const auto& [key, a] : admissions_) admitted += a.admitted ? 1 : 0;
  admitted_ = admitted;
  return admitted;
}

std::optional<lifecycle::CreateRefusal> Refusals::of(const std::string& key, const nlohmann::json& task,
                                          const std::function<std::string(const std::string&)>& namespace_labels) {
  {
    std::lock_guard lock(mu_);
    if (!refusals_.count(key)) return std::nullopt;  // the common case, asked for every task in every plan
  }
  const auto& meta = kube::object_at(task, "metadata");
  const std::string labels = namespace_labels(kube::string_at(meta, "namespace"));
  std::lock_guard lock(mu_);
  auto it = refusals_.find(key);
  if (it == refusals_.end()) return std::nullopt;
  const Refusal& r = it->second;
  const auto since = kube::cluster_clock().now() - r.at;
  if (r.uid != kube::string_at(meta, "uid") || r.generation != kube::int_at(meta, "generation").value_or(0) ||
      r.namespace_labels != labels || (r.what.blocking && since >= retry_after_)) {
    refusals_.erase(it);  // something changed: try again
    return std::nullopt;
  }
  lifecycle::CreateRefusal out = r.what;
  if (out.blocking) out.retry_in = std::chrono::duration_cast<std::chrono::seconds>(retry_after_ - since) + std::chrono::seconds(1);
  return out;
}

void Refusals::record(const std::string& key, const std::string& uid, int64_t generation, const std::string& namespace_labels,
                      lifecycle::CreateRefusal what) {
  std::lock_guard lock(mu_);
  refusals_[key] = {uid, generation, namespace_labels, kube::cluster_clock().now(), std::move(what)};
}

void Refusals::forget(const std::string& key) {
  std::lock_guard lock(mu_);
  refusals_.erase(key);
}

bool Refusals::blocking(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = refusals_.find(key);
  return it != refusals_.end() && it->second.what.blocking;
}

std::vector<std::string> Refusals::keys_in(const std::string& ns) const {
  const std::string prefix = ns + "/";
  std::vector<std::string> out;
  std::lock_guard lock(mu_);
  for (const auto& [key, r] : refusals_)
    if (key.rfind(prefix, 0) == 0) out.push_back(key);
  return out;
}

}  // namespace valley::task
