#include "controllers/task/transfer_watcher.h"

#include <spdlog/spdlog.h>

#include "controllers/cost/task_report.h"
#include "controllers/task/poll_schedule.h"
#include "operator/kube/remote_clock.h"
#include "operator/storage/task_store.h"
#include "operator/kube/json_fields.h"
#include "operator/kube/timefmt.h"
#include "operator/json_text.h"

namespace valley::task {

TransferWatcher::TransferWatcher(kube::Api& client, std::chrono::seconds retry, OnChange on_change, std::vector<std::string> denied_cidrs)
    : client_(client), denied_cidrs_(std::move(denied_cidrs)), retry_(retry), on_change_(std::move(on_change)) {}

void TransferWatcher::check_data(const api::TaskSpec& spec) {
  if (!spec.data) return;
  std::lock_guard lock(mu_);
  Entry& e = entries_[spec.ns + "/" + spec.name];
  e.ns = spec.ns;
  if (!e.data || e.data->uri != spec.data->uri || e.data->secret != spec.data->secret) {
    e.data = spec.data;
    e.data_check.reset();
    e.next = {};
    cv_.notify_one();
  }
}

std::optional<lifecycle::DataCheck> TransferWatcher::data(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  return it == entries_.end() ? std::nullopt : it->second.data_check;
}

void TransferWatcher::keep_outputs(const std::string& key, const api::TaskSpec& spec, nlohmann::json task) {
  if (!spec.outputs) return;
  std::lock_guard lock(mu_);
  Entry& e = entries_[key];
  if (e.kept && e.kept->contains("time")) return;  // done; the task's status will show it
  const bool fresh = e.task.is_null();
  e.ns = spec.ns;
  e.outputs = spec.outputs;
  e.task = std::move(task);
  if (fresh) {
    e.next = {};
    cv_.notify_one();
  }
}

std::optional<nlohmann::json> TransferWatcher::outputs(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  return it == entries_.end() ? std::nullopt : it->second.kept;
}

void TransferWatcher::forget(const std::string& key) {
  std::lock_guard lock(mu_);
  entries_.erase(key);
}

void TransferWatcher::run(const std::atomic<bool>& stop) {
  run_per_namespace(stop, kStoreThreads, mu_, cv_, entries_, retry_, [this](const Entry& e) { return has_work(e); },
                    [this](const std::string& key, Entry entry) { work(key, std::move(entry)); });
}

namespace {

lifecycle::DataCheck check(kube::Api& client, const std::string& ns, const api::TaskSpec::Data& data, const std::vector<std::string>& denied) {
  std::string error;
  try {
    auto store = storage::open_task_store(client, ns, data.secret, data.uri, "data", &error, denied);
    if (!store) return {false, error};
    // The whole set, once: its size is what a node's copy of it needs.
    lifecycle::DataCheck c{true, "", 0, 0};
    for (const auto& o : store->list()) {
      ++c.files;
      c.bytes += static_cast<int64_t>(o.size);
    }
    if (c.files == 0) return {false, "data " + data.uri + ": no objects under it"};
    c.message = "data " + data.uri + " is readable: " + std::to_string(c.files) + (c.files == 1 ? " object, " : " objects, ") +
                std::to_string(c.bytes) + " bytes";
    return c;
  } catch (const std::exception& e) {
    return {false, "data " + data.uri + ": " + e.what()};
  }
}

nlohmann::json keep(kube::Api& client, const std::string& ns, const api::TaskSpec::Outputs& out, const nlohmann::json& task,
                    const std::vector<std::string>& denied) {
  nlohmann::json kept = {{"uri", out.uri}};
  std::string error;
  try {
    auto store = storage::open_task_store(client, ns, out.secret, out.uri, "outputs", &error, denied);
    if (!store) {
      kept["error"] = error;
      return kept;
    }
    int64_t files = 0, bytes = 0;
    for (const auto& o : store->list()) {
      if (o.key == lifecycle::kReportJson || o.key == lifecycle::kReportHtml) continue;
      ++files;
      bytes += static_cast<int64_t>(o.size);
    }
    const std::string phase = kube::string_at(kube::object_at(task, "status"), "phase");
    const bool all_kept = kube::array_at(kube::object_at(task, "status"), "outputsNotKept").empty();
    kept.update({{"files", files}, {"bytes", bytes}, {"partial", phase != "Succeeded" || !all_kept}});
    const std::string now = kube::format_time(kube::cluster_clock().now());
    const nlohmann::json report = cost::task_report(task, kept, now);
    store->put(lifecycle::kReportJson, json_text(report, 2));
    store->put(lifecycle::kReportHtml, cost::report_html(report));
    kept["report"] = out.uri + "/" + lifecycle::kReportHtml;
    kept["time"] = now;
  } catch (const std::exception& e) {
    kept["error"] = e.what();
  }
  return kept;
}

}  // namespace

void TransferWatcher::work(const std::string& key, Entry entry) {
  std::optional<lifecycle::DataCheck> checked;
  std::optional<nlohmann::json> kept;
  if (entry.data && !(entry.data_check && entry.data_check->ready)) checked = check(client_, entry.ns, *entry.data, denied_cidrs_);
  if (entry.outputs && !entry.task.is_null()) kept = keep(client_, entry.ns, *entry.outputs, entry.task, denied_cidrs_);
  bool changed = false;
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return;  // forgotten meanwhile
    Entry& e = it->second;
    if (checked && e.data && e.data->uri == entry.data->uri) {
      changed |= !e.data_check || e.data_check->ready != checked->ready || e.data_check->message != checked->message;
      e.data_check = checked;
    }
    if (kept) {
      changed |= e.kept != kept;
      e.kept = kept;
      if (kept->contains("time")) e.task = nullptr;
    }
  }
  if (checked && !checked->ready && changed) spdlog::warn("{}: {}", key, checked->message);
  if (kept) {
    if (kept->contains("time")) {
      spdlog::info("{}: outputs kept in {} ({} files) and the report written", key, kept->value("uri", ""), kept->value("files", 0));
    } else if (changed) {
      spdlog::warn("{}: outputs {}: {}", key, kept->value("uri", ""), kept->value("error", ""));
    }
  }
  if (changed && on_change_) on_change_(key);
}

}  // namespace valley::task
