// An informer keeps a Store in step with the API server for one resource (optionally one namespace
// and selectors): list, then watch from the list's resourceVersion; on a dropped stream it resumes
// from the last resourceVersion it saw (bookmarks keep that fresh); when the server says that
// version is too old (410 Gone / Expired) it lists again and reconciles the cache with the new
// list, emitting add/update/delete for what changed meanwhile. Handlers run on the informer's
// threads and should only enqueue work. A periodic resync re-delivers every object as an update.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "operator/kube/api.h"
#include "operator/kube/store.h"

namespace valley::kube {

struct InformerOptions {
  std::string ns;  // "" = all namespaces
  std::string label_selector;
  std::string field_selector;
  std::chrono::seconds resync{0};  // 0 = never
  int64_t page_size = 500;
  // The server ends each watch after a random time in [min, 2*min) so reconnects do not synchronise.
  std::chrono::seconds watch_timeout_min{300};
  // A watch silent this long is taken for a dead connection and resumed from the last
  // resourceVersion (no relist). The server sends a bookmark about every minute, so this allows
  // two to be missed; 0 = wait for the server's timeout.
  std::chrono::seconds watch_idle_timeout{150};
  // Applied to each object before it is cached: by default drops metadata.managedFields, which
  // Valley never reads and which is a large part of every object.
  std::function<void(nlohmann::json&)> transform = strip_managed_fields;
  // When set, only what this keeps of each object is built from a watch event (and kept of a listed
  // one), before `transform`: the cheap way to a lean cache (field_mask.h).
  std::shared_ptr<const FieldMask> fields;
  // Fault injection, for tests only: each watch event is applied this much later (the stream is held
  // back), as a loaded API server delivers one resource's events after another's.
  std::chrono::milliseconds event_delay{0};

  static void strip_managed_fields(nlohmann::json& object);
};

struct InformerStats {
  std::atomic<uint64_t> lists{0};           // full lists (1 + relists)
  std::atomic<uint64_t> watches{0};         // watch requests started
  std::atomic<uint64_t> watch_errors{0};    // watches that failed (connection, server error)
  std::atomic<uint64_t> expired{0};         // 410 Gone / Expired answers that forced a relist
  std::atomic<uint64_t> events{0};          // ADDED/MODIFIED/DELETED received
  std::atomic<uint64_t> unchanged{0};       // MODIFIED with nothing cached changed: no handler called
};

// What every informer does whatever it caches: the list and watch loop, the stats, start and stop.
class InformerBase {
 public:
  InformerBase(Api& client, Resource resource, InformerOptions options);
  virtual ~InformerBase();
  InformerBase(const InformerBase&) = delete;
  InformerBase& operator=(const InformerBase&) = delete;

  void start();
  // Stops the threads (within about a second: a watch is cancelled between reads).
  void stop();
  bool has_synced() const { return synced_.load(); }
  bool wait_for_sync(std::chrono::milliseconds timeout);
  const InformerStats& stats() const { return stats_; }
  const Resource& resource() const { return resource_; }
  std::string last_resource_version() const;

 protected:
  // The cache's side, on the informer's threads. A listing's items (masked and transformed) are
  // taken one by one as its pages come (made the cached type at once: a relist is never held as
  // JSON), then become the cache; an ADDED/MODIFIED/DELETED event's object (likewise)
  // is applied, returning true when it changed nothing the cache keeps (no handler called); every
  // cached object is re-delivered.
  virtual void take_listed(nlohmann::json&& item) = 0;
  virtual void replace_all_listed() = 0;
  virtual void discard_listed() = 0;  // what a listing that failed halfway had taken
  virtual bool apply(const std::string& type, nlohmann::json&& object) = 0;
  virtual void resync() = 0;

 private:
  void run();
  void resync_loop();
  void list_and_replace();
  // Returns normally when the stream ends (resume from last_rv_); throws KubeError on failure.
  void watch_once();
  void apply_event(WatchEvent&& event);
  bool sleep_unless_stopped(std::chrono::milliseconds d);

  Api& client_;
  Resource resource_;
  InformerOptions options_;
  InformerStats stats_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> synced_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string last_rv_;
  std::thread thread_;
  std::thread resync_thread_;
};

template <class T>
struct BasicInformerHandlers {
  using Ptr = std::shared_ptr<const T>;
  std::function<void(const Ptr&)> on_add;
  std::function<void(const Ptr& old_object, const Ptr& new_object)> on_update;
  std::function<void(const Ptr&)> on_delete;
};

// An informer whose cache holds T (ObjectTraits<T> in store.h: the JSON object, or a typed
// projection made from it after the mask and transform).
template <class T>
class BasicInformer : public InformerBase {
 public:
  using Ptr = std::shared_ptr<const T>;
  using Handlers = BasicInformerHandlers<T>;

  BasicInformer(Api& client, Resource resource, InformerOptions options = {})
      : InformerBase(client, std::move(resource), std::move(options)) {
    ObjectTraits<T>::add_indexes(store_);
  }
  ~BasicInformer() override { stop(); }  // the threads use the store and handlers below

  // Before start().
  void add_handlers(Handlers handlers) { handlers_.push_back(std::move(handlers)); }
  BasicStore<T>& store() { return store_; }

 protected:
  void take_listed(nlohmann::json&& item) override { listed_.push_back(std::make_shared<const T>(ObjectTraits<T>::from(std::move(item)))); }

  void discard_listed() override { listed_.clear(); }

  void replace_all_listed() override {
    std::vector<Ptr> listed;
    listed.swap(listed_);
    std::unordered_set<std::string> seen;
    seen.reserve(listed.size());
    for (auto& fresh : listed) {
      std::string key = ObjectTraits<T>::key(*fresh);
      seen.insert(key);
      Ptr old = store_.upsert(key, fresh);
      if (!old) {
        for (auto& h : handlers_)
          if (h.on_add) h.on_add(fresh);
      } else if (ObjectTraits<T>::resource_version(*old) != ObjectTraits<T>::resource_version(*fresh)) {
        for (auto& h : handlers_)
          if (h.on_update) h.on_update(old, fresh);
      }
    }
    // Objects deleted while we were not watching.
    for (const auto& key : store_.keys()) {
      if (seen.count(key)) continue;
      if (Ptr gone = store_.erase(key))
        for (auto& h : handlers_)
          if (h.on_delete) h.on_delete(gone);
    }
  }

  bool apply(const std::string& type, nlohmann::json&& object) override {
    auto fresh = std::make_shared<const T>(ObjectTraits<T>::from(std::move(object)));
    const std::string key = ObjectTraits<T>::key(*fresh);
    if (type == "ADDED" || type == "MODIFIED") {
      // Nothing the cache keeps changed (a node's heartbeat, fields the mask drops: most node
      // events): the cache takes the new resourceVersion, no handler is called.
      if (type == "MODIFIED" && store_.replace_if_same(key, fresh)) return true;
      Ptr old = store_.upsert(key, fresh);
      for (auto& h : handlers_) {
        if (!old && h.on_add) h.on_add(fresh);
        if (old && h.on_update) h.on_update(old, fresh);
      }
    } else if (type == "DELETED") {
      Ptr gone = store_.erase(key);
      if (!gone) gone = fresh;
      for (auto& h : handlers_)
        if (h.on_delete) h.on_delete(gone);
    }
    return false;
  }

  void resync() override {
    for (const auto& obj : store_.list())
      for (auto& h : handlers_)
        if (h.on_update) h.on_update(obj, obj);
  }

 private:
  BasicStore<T> store_;
  std::vector<Handlers> handlers_;
  std::vector<Ptr> listed_;  // the listing being taken (the informer's thread only)
};

// The generic informer over JSON objects.
using Informer = BasicInformer<nlohmann::json>;
using InformerHandlers = BasicInformerHandlers<nlohmann::json>;

}  // namespace valley::kube
