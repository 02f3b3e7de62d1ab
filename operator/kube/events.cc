#include "operator/kube/events.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <random>

#include "operator/kube/error.h"
#include "operator/kube/remote_clock.h"
#include "operator/kube/this_thread.h"
#include "operator/text.h"

namespace valley::kube {

using json = nlohmann::json;

namespace {

std::string str(const json& object, const char* field) {
  auto it = object.find(field);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

json reference_to(const json& object) {
  const json meta = object.value("metadata", json::object());
  json ref = {{"apiVersion", str(object, "apiVersion")}, {"kind", str(object, "kind")}, {"name", str(meta, "name")}};
  if (auto ns = str(meta, "namespace"); !ns.empty()) ref["namespace"] = ns;
  if (auto uid = str(meta, "uid"); !uid.empty()) ref["uid"] = uid;
  if (auto rv = str(meta, "resourceVersion"); !rv.empty()) ref["resourceVersion"] = rv;
  return ref;
}

}  // namespace

bool EventAggregator::observe(const json& regarding, const std::string& type, const std::string& reason,
                              const std::string& action, const std::string& note, SystemTime now) {
  json ref = reference_to(regarding);
  std::string object_id = ref.value("uid", "");
  if (object_id.empty()) object_id = ref.value("kind", "") + "/" + ref.value("namespace", "") + "/" + ref.value("name", "");
  // A note longer than the API allows (1 kB) is cut, not refused; one carrying a user's bytes that are
  // not UTF-8 is repaired (the Event could not be serialised otherwise).
  const std::string trimmed = bounded_text(note, 1024);
  std::string key = object_id + "\x1f" + type + "\x1f" + reason + "\x1f" + action + "\x1f" + trimmed;

  auto it = entries_.find(key);
  if (it != entries_.end() && now - it->second.last <= options_.series_window) {
    it->second.count++;
    it->second.last = now;
    unwritten_.insert(key);
    return true;
  }
  // A new event: the object's bucket must allow it.
  auto [bit, fresh] = buckets_.try_emplace(object_id, Bucket{static_cast<double>(options_.burst), now});
  Bucket& bucket = bit->second;
  if (!fresh && now > bucket.last) {
    double refill = std::chrono::duration<double>(now - bucket.last).count() /
                    std::chrono::duration<double>(options_.refill).count();
    bucket.tokens = std::min<double>(options_.burst, bucket.tokens + refill);
    bucket.last = now;
  }
  if (bucket.tokens < 1.0) {
    ++dropped_;
    return false;
  }
  bucket.tokens -= 1.0;

  std::string ns = ref.value("namespace", "default");
  char suffix[24];
  std::snprintf(suffix, sizeof suffix, ".%llx%04llx",
                static_cast<unsigned long long>(std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count()),
                static_cast<unsigned long long>(++sequence_ & 0xffff));
  Entry entry;
  entry.event = {{"apiVersion", "events.k8s.io/v1"},
                 {"kind", "Event"},
                 {"metadata", {{"name", ref.value("name", "object") + suffix}, {"namespace", ns}}},
                 {"eventTime", format_micro_time(now)},
                 {"reportingController", options_.reporting_controller},
                 {"reportingInstance", options_.reporting_instance},
                 {"action", action},
                 {"reason", reason},
                 {"regarding", ref},
                 {"note", trimmed},
                 {"type", type}};
  entry.count = 1;
  entry.first = entry.last = now;
  entry.create_pending = true;
  entries_[key] = std::move(entry);
  unwritten_.insert(key);
  evict(now);
  return true;
}

void EventAggregator::evict(SystemTime now) {
  // The sweep for stale entries and full buckets looks at every one: once a second is soon enough
  // (an entry outlives its window by at most that), unless the table is over its bound.
  if (now - last_sweep_ < std::chrono::seconds(1) && now >= last_sweep_ && entries_.size() <= options_.max_tracked) return;
  last_sweep_ = now;
  for (auto it = entries_.begin(); it != entries_.end();) {
    bool stale = now - it->second.last > options_.series_window && it->second.written_count == it->second.count;
    it = stale ? entries_.erase(it) : std::next(it);
  }
  while (entries_.size() > options_.max_tracked) {
    auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                   [](const auto& a, const auto& b) { return a.second.last < b.second.last; });
    entries_.erase(oldest);
  }
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    bool full = it->second.tokens + std::chrono::duration<double>(now - it->second.last).count() /
                                        std::chrono::duration<double>(options_.refill).count() >=
                options_.burst;
    it = full ? buckets_.erase(it) : std::next(it);
  }
}

std::vector<PendingWrite> EventAggregator::take_due(SystemTime now) {
  std::vector<PendingWrite> out;
  for (auto k = unwritten_.begin(); k != unwritten_.end();) {
    auto found = entries_.find(*k);
    if (found == entries_.end()) {  // evicted meanwhile
      k = unwritten_.erase(k);
      continue;
    }
    const std::string& key = found->first;
    Entry& e = found->second;
    if (e.create_pending) {
      json ev = e.event;
      if (e.count > 1) ev["series"] = {{"count", e.count}, {"lastObservedTime", format_micro_time(e.last)}};
      out.push_back({PendingWrite::Kind::Create, key, std::move(ev)});
      e.create_pending = false;
      e.created = true;
      e.written_count = e.count;
      e.last_write = now;
    } else if (e.created && e.count != e.written_count && now - e.last_write >= options_.series_flush) {
      out.push_back({PendingWrite::Kind::UpdateSeries,
                     key,
                     {{"namespace", e.event["metadata"]["namespace"]},
                      {"name", e.event["metadata"]["name"]},
                      {"count", e.count},
                      {"lastObservedTime", format_micro_time(e.last)}}});
      e.written_count = e.count;
      e.last_write = now;
    }
    // Left for a later pass: a count whose series update is not due yet.
    k = e.created && e.count != e.written_count ? std::next(k) : unwritten_.erase(k);
  }
  return out;
}

void EventAggregator::create_failed(const std::string& key) {
  if (auto it = entries_.find(key); it != entries_.end()) {
    it->second.create_pending = true;
    it->second.created = false;
    unwritten_.insert(key);
  }
}

EventRecorder::EventRecorder(Api& client, EventOptions options)
    : client_(client), options_(options), aggregator_(std::move(options)) {
  thread_ = std::thread([this] {
    name_this_thread("events");
    loop();
  });
}

EventRecorder::~EventRecorder() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  flush();
}

void EventRecorder::record(const json& regarding, const std::string& type, const std::string& reason,
                           const std::string& action, const std::string& note) {
  {
    std::lock_guard lock(mu_);
    if (!aggregator_.observe(regarding, type, reason, action, note, cluster_clock().now())) {
      spdlog::debug("event dropped by the spam filter: {} {}", reason, note);
      return;
    }
  }
  cv_.notify_all();
}

void EventRecorder::write(std::vector<PendingWrite> batch) {
  std::lock_guard write_lock(write_mu_);
  for (auto& w : batch) {
    try {
      if (w.kind == PendingWrite::Kind::Create) {
        client_.create(resources::kEvents, w.event["metadata"]["namespace"], w.event);
      } else {
        client_.patch(resources::kEvents, w.event["namespace"], w.event["name"], PatchType::Merge,
                      {{"series", {{"count", w.event["count"]}, {"lastObservedTime", w.event["lastObservedTime"]}}}});
      }
      ++writes_;
    } catch (const KubeError& e) {
      // Events are best effort: a namespace being deleted or a lost connection must not stall us.
      spdlog::debug("event write failed: {}", e.what());
      if (w.kind == PendingWrite::Kind::Create && e.http_status() != 404 && e.http_status() != 403 &&
          e.http_status() != 422 && e.http_status() != 409) {
        std::lock_guard lock(mu_);
        aggregator_.create_failed(w.key);
      }
    } catch (const std::exception& e) {
      // Not the API's answer: an Event that cannot be written (a bug) is dropped, never the thread.
      spdlog::error("event not written: {}", e.what());
    }
  }
}

void EventRecorder::loop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    auto batch = aggregator_.take_due(cluster_clock().now());
    if (!batch.empty()) {
      lock.unlock();
      write(std::move(batch));
      lock.lock();
      continue;
    }
    cv_.wait_for(lock, std::chrono::seconds(1));
  }
}

void EventRecorder::flush() {
  std::vector<PendingWrite> batch;
  {
    std::lock_guard lock(mu_);
    // Far enough in the future that every series update is due; creates carry the real times.
    batch = aggregator_.take_due(cluster_clock().now() + options_.series_flush);
  }
  write(std::move(batch));
}

}  // namespace valley::kube
