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
#include <vector>

#include "operator/kube/client.h"
#include "operator/kube/store.h"

namespace valley::kube {

struct InformerHandlers {
  std::function<void(const ObjectPtr&)> on_add;
  std::function<void(const ObjectPtr& old_object, const ObjectPtr& new_object)> on_update;
  std::function<void(const ObjectPtr&)> on_delete;
};

struct InformerOptions {
  std::string ns;  // "" = all namespaces
  std::string label_selector;
  std::string field_selector;
  std::chrono::seconds resync{0};  // 0 = never
  int64_t page_size = 500;
  // The server ends each watch after a random time in [min, 2*min) so reconnects do not synchronise.
  std::chrono::seconds watch_timeout_min{300};
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

class Informer {
 public:
  Informer(Client& client, Resource resource, InformerOptions options = {});
  ~Informer();
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Before start().
  void add_handlers(InformerHandlers handlers);
  Store& store() { return store_; }

  void start();
  // Stops the threads (within about a second: a watch is cancelled between reads).
  void stop();
  bool has_synced() const { return synced_.load(); }
  bool wait_for_sync(std::chrono::milliseconds timeout);
  const InformerStats& stats() const { return stats_; }
  const Resource& resource() const { return resource_; }
  std::string last_resource_version() const;

 private:
  void run();
  void resync_loop();
  void list_and_replace();
  // Returns normally when the stream ends (resume from last_rv_); throws KubeError on failure.
  void watch_once();
  void apply_event(WatchEvent&& event);
  bool sleep_unless_stopped(std::chrono::milliseconds d);

  Client& client_;
  Resource resource_;
  InformerOptions options_;
  Store store_;
  std::vector<InformerHandlers> handlers_;
  InformerStats stats_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> synced_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string last_rv_;
  std::thread thread_;
  std::thread resync_thread_;
};

}  // namespace valley::kube
