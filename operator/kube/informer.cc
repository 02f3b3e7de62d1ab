#include "operator/kube/informer.h"

#include <spdlog/spdlog.h>

#include <random>

#include "operator/kube/error.h"
#include "operator/kube/this_thread.h"

namespace valley::kube {

void InformerOptions::strip_managed_fields(nlohmann::json& object) {
  if (auto meta = object.find("metadata"); meta != object.end() && meta->is_object()) meta->erase("managedFields");
}

InformerBase::InformerBase(Api& client, Resource resource, InformerOptions options)
    : client_(client), resource_(std::move(resource)), options_(std::move(options)) {}

InformerBase::~InformerBase() { stop(); }

void InformerBase::start() {
  thread_ = std::thread([this] {
    name_this_thread("watch-" + resource_.plural);  // e.g. watch-pods, watch-trainingtas(ks)
    run();
  });
  if (options_.resync.count() > 0)
    resync_thread_ = std::thread([this] {
      name_this_thread("resync-" + resource_.plural);
      resync_loop();
    });
}

void InformerBase::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (resync_thread_.joinable()) resync_thread_.join();
}

bool InformerBase::wait_for_sync(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return synced_.load() || stop_.load(); }) && synced_.load();
}

std::string InformerBase::last_resource_version() const {
  std::lock_guard lock(mu_);
  return last_rv_;
}

bool InformerBase::sleep_unless_stopped(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  return !cv_.wait_for(lock, d, [this] { return stop_.load(); });
}

void InformerBase::list_and_replace() {
  ListOptions lo;
  lo.label_selector = options_.label_selector;
  lo.field_selector = options_.field_selector;
  lo.page_size = options_.page_size;
  // Page by page, each item taken as the cache will hold it: the whole list is never held as JSON
  // (what the list returns is left null).
  lo.item_transform = [this](nlohmann::json& item) {
    if (options_.fields) options_.fields->apply(item);
    if (options_.transform) options_.transform(item);
    take_listed(std::move(item));
    item = nullptr;
  };
  discard_listed();
  ListResult result = client_.list(resource_, options_.ns, lo);
  ++stats_.lists;
  replace_all_listed();
  {
    std::lock_guard lock(mu_);
    last_rv_ = result.resource_version;
    synced_ = true;
  }
  cv_.notify_all();
}

void InformerBase::apply_event(WatchEvent&& event) {
  if (event.type == "ERROR") {
    // A Status inside the stream: 410 means our resourceVersion is gone from the watch cache.
    long code = event.object.value("code", 0L);
    std::string reason = event.object.value("reason", "");
    throw KubeError("watch " + resource_.plural + ": " + event.object.value("message", "error event"), code, reason);
  }
  std::string rv = resource_version_of(event.object);
  if (event.type == "BOOKMARK") {
    std::lock_guard lock(mu_);
    if (!rv.empty()) last_rv_ = rv;
    return;
  }
  ++stats_.events;
  if (options_.event_delay.count() > 0 && !sleep_unless_stopped(options_.event_delay)) return;  // stopping
  if (options_.transform) options_.transform(event.object);
  if (apply(event.type, std::move(event.object))) ++stats_.unchanged;
  std::lock_guard lock(mu_);
  if (!rv.empty()) last_rv_ = rv;
}

void InformerBase::watch_once() {
  static thread_local std::mt19937 rng(std::random_device{}());
  WatchOptions wo;
  wo.resource_version = last_resource_version();
  wo.label_selector = options_.label_selector;
  wo.field_selector = options_.field_selector;
  wo.object_fields = options_.fields;
  auto min = static_cast<int>(options_.watch_timeout_min.count());
  wo.timeout_seconds = min + static_cast<int>(rng() % static_cast<unsigned>(std::max(1, min)));
  wo.idle_timeout_seconds = static_cast<int>(options_.watch_idle_timeout.count());
  ++stats_.watches;
  client_.watch(resource_, options_.ns, wo, [this](WatchEvent&& ev) {
    apply_event(std::move(ev));
    return !stop_.load();
  }, &stop_);
}

void InformerBase::run() {
  std::chrono::milliseconds backoff(100);
  const std::chrono::milliseconds max_backoff(30000);
  bool need_list = true;
  while (!stop_.load()) {
    try {
      if (need_list) {
        list_and_replace();
        need_list = false;
      }
      watch_once();
      backoff = std::chrono::milliseconds(100);  // a watch that ended normally: resume at once
    } catch (const KubeError& e) {
      if (stop_.load()) break;
      if (e.http_status() == 410 || e.reason() == "Expired" || e.reason() == "Gone") {
        ++stats_.expired;
        spdlog::info("informer {}: resourceVersion {} expired, listing again", resource_.plural, last_resource_version());
        need_list = true;
        continue;
      }
      ++stats_.watch_errors;
      spdlog::warn("informer {}: {}; retrying in {} ms", resource_.plural, e.what(), backoff.count());
      if (!sleep_unless_stopped(backoff)) break;
      backoff = std::min(backoff * 2, max_backoff);
    } catch (const std::exception& e) {
      // A bug or a malformed object must not kill the informer: log, back off, list again.
      ++stats_.watch_errors;
      spdlog::error("informer {}: unexpected error: {}; listing again in {} ms", resource_.plural, e.what(), backoff.count());
      need_list = true;
      if (!sleep_unless_stopped(backoff)) break;
      backoff = std::min(backoff * 2, max_backoff);
    }
  }
}

void InformerBase::resync_loop() {
  auto period = std::chrono::duration_cast<std::chrono::milliseconds>(options_.resync);
  while (sleep_unless_stopped(period)) {
    if (synced_.load()) resync();
  }
}

}  // namespace valley::kube
