// Thread-safe cache of API objects keyed by namespace/name, with secondary indexes (by namespace,
// owner UID, node name, label, or any function of the object). Objects are immutable shared
// pointers: readers keep a consistent object while the cache moves on. The cached type is the JSON
// object (Store) or a typed projection of it (BasicStore<T> with ObjectTraits<T>).
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <mutex>
#include <memory>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace valley::kube {

using ObjectPtr = std::shared_ptr<const nlohmann::json>;

namespace index {
inline constexpr const char* kNamespace = "namespace";
inline constexpr const char* kOwnerUid = "owner-uid";
inline constexpr const char* kNodeName = "node-name";
inline constexpr const char* kLabel = "label";  // values "key=value"
std::vector<std::string> by_namespace(const nlohmann::json& object);
std::vector<std::string> by_owner_uid(const nlohmann::json& object);
std::vector<std::string> by_node_name(const nlohmann::json& object);  // pods: spec.nodeName
std::vector<std::string> by_label(const nlohmann::json& object);
}  // namespace index

// Whether two versions of an object differ in nothing but metadata.resourceVersion (compared in
// place, nothing copied).
bool same_but_resource_version(const nlohmann::json& a, const nlohmann::json& b);

// What a cache needs to know of the type it holds. The generic JSON object is one; a reconciler may
// cache a typed projection instead (a struct of the fields it reads: far smaller than nlohmann's
// tree) by specialising this for its type.
//   key(o)                     namespace/name (name for cluster-scoped objects)
//   resource_version(o)        metadata.resourceVersion
//   same_but_resource_version  the two differ in nothing but their resourceVersion
//   from(json&&)               the cached form of an object from the API (after the informer's mask and transform)
//   add_indexes(store)         the indexes an informer's store starts with
template <class T>
struct ObjectTraits;

template <class T>
class BasicStore;

template <>
struct ObjectTraits<nlohmann::json> {
  static std::string key(const nlohmann::json& o);
  static std::string resource_version(const nlohmann::json& o);
  static bool same_but_resource_version(const nlohmann::json& a, const nlohmann::json& b) { return kube::same_but_resource_version(a, b); }
  static nlohmann::json from(nlohmann::json&& o) { return std::move(o); }
  static void add_indexes(BasicStore<nlohmann::json>& store);  // the four standard ones
};

template <class T>
class BasicStore {
 public:
  using Ptr = std::shared_ptr<const T>;
  // The values an object is filed under in one index (none, one or several).
  using Index = std::function<std::vector<std::string>(const T&)>;

  // Registers an index; call before the store is filled.
  void add_index(const std::string& name, Index func) {
    std::unique_lock lock(mu_);
    index_funcs_[name] = std::move(func);
    indexes_[name];
  }

  // Inserts or replaces; returns the previous object (null if none).
  Ptr upsert(const std::string& key, Ptr object) {
    std::unique_lock lock(mu_);
    auto& slot = objects_[key];
    Ptr previous = std::move(slot);
    if (previous) unindex(key, *previous);
    reindex(key, *object);
    slot = std::move(object);
    return previous;
  }
  // Replaces the stored object with `object` if the two differ in nothing but their resourceVersion
  // (indexes untouched) and says so; otherwise changes nothing and returns false.
  bool replace_if_same(const std::string& key, const Ptr& object) {
    std::unique_lock lock(mu_);
    auto it = objects_.find(key);
    if (it == objects_.end() || !ObjectTraits<T>::same_but_resource_version(*it->second, *object)) return false;
    it->second = object;
    return true;
  }
  // Removes; returns the removed object (null if none).
  Ptr erase(const std::string& key) {
    std::unique_lock lock(mu_);
    auto it = objects_.find(key);
    if (it == objects_.end()) return nullptr;
    Ptr previous = std::move(it->second);
    objects_.erase(it);
    unindex(key, *previous);
    return previous;
  }

  Ptr get(const std::string& key) const {
    std::shared_lock lock(mu_);
    auto it = objects_.find(key);
    return it == objects_.end() ? nullptr : it->second;
  }
  std::vector<Ptr> list() const {
    std::shared_lock lock(mu_);
    std::vector<Ptr> out;
    out.reserve(objects_.size());
    for (const auto& [k, v] : objects_) out.push_back(v);
    return out;
  }
  std::vector<std::string> keys() const {
    std::shared_lock lock(mu_);
    std::vector<std::string> out;
    out.reserve(objects_.size());
    for (const auto& [k, v] : objects_) out.push_back(k);
    return out;
  }
  std::vector<Ptr> by_index(const std::string& index_name, const std::string& value) const {
    std::shared_lock lock(mu_);
    std::vector<Ptr> out;
    auto idx = indexes_.find(index_name);
    if (idx == indexes_.end()) return out;
    auto it = idx->second.find(value);
    if (it == idx->second.end()) return out;
    for (const auto& key : it->second)
      if (auto obj = objects_.find(key); obj != objects_.end()) out.push_back(obj->second);
    return out;
  }
  size_t size() const {
    std::shared_lock lock(mu_);
    return objects_.size();
  }

 private:
  void unindex(const std::string& key, const T& object) {
    for (auto& [name, func] : index_funcs_) {
      auto& idx = indexes_[name];
      for (const auto& value : func(object)) {
        auto it = idx.find(value);
        if (it == idx.end()) continue;
        it->second.erase(key);
        if (it->second.empty()) idx.erase(it);
      }
    }
  }
  void reindex(const std::string& key, const T& object) {
    for (auto& [name, func] : index_funcs_)
      for (const auto& value : func(object)) indexes_[name][value].insert(key);
  }

  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, Ptr> objects_;
  std::map<std::string, Index> index_funcs_;
  // index name -> value -> keys
  std::map<std::string, std::unordered_map<std::string, std::set<std::string>>> indexes_;
};

// The generic cache of API objects as JSON.
using Store = BasicStore<nlohmann::json>;
// The four standard indexes above.
void add_standard_indexes(Store& store);

}  // namespace valley::kube
