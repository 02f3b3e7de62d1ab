// Thread-safe cache of API objects keyed by namespace/name, with secondary indexes (by namespace,
// owner UID, node name, label, or any function of the object). Objects are immutable shared
// pointers: readers keep a consistent object while the cache moves on.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace valley::kube {

using ObjectPtr = std::shared_ptr<const nlohmann::json>;
// The values an object is filed under in one index (none, one or several).
using IndexFunc = std::function<std::vector<std::string>(const nlohmann::json&)>;

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

class Store {
 public:
  // Registers an index; call before the store is filled.
  void add_index(const std::string& name, IndexFunc func);
  // The four standard indexes above.
  void add_standard_indexes();

  // Inserts or replaces; returns the previous object (null if none).
  ObjectPtr upsert(const std::string& key, ObjectPtr object);
  // Replaces the stored object with `object` if the two differ in nothing but their resourceVersion
  // (indexes untouched) and says so; otherwise changes nothing and returns false.
  bool replace_if_same(const std::string& key, const ObjectPtr& object);
  // Removes; returns the removed object (null if none).
  ObjectPtr erase(const std::string& key);

  ObjectPtr get(const std::string& key) const;
  std::vector<ObjectPtr> list() const;
  std::vector<std::string> keys() const;
  std::vector<ObjectPtr> by_index(const std::string& index_name, const std::string& value) const;
  size_t size() const;

 private:
  void unindex(const std::string& key, const nlohmann::json& object);
  void reindex(const std::string& key, const nlohmann::json& object);

  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, ObjectPtr> objects_;
  std::map<std::string, IndexFunc> index_funcs_;
  // index name -> value -> keys
  std::map<std::string, std::unordered_map<std::string, std::set<std::string>>> indexes_;
};

}  // namespace valley::kube
