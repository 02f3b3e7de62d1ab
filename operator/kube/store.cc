#include "operator/kube/store.h"

#include <mutex>

namespace valley::kube {

using json = nlohmann::json;

namespace {
// const json::operator[] on a missing key is undefined behaviour; objects from the API always have
// metadata, but a cache must not trust that.
const json& field(const json& object, const char* name) {
  static const json kEmpty = json::object();
  auto it = object.find(name);
  return it == object.end() || !it->is_object() ? kEmpty : *it;
}
}  // namespace

namespace index {
std::vector<std::string> by_namespace(const json& object) {
  const json& meta = field(object, "metadata");
  auto it = meta.find("namespace");
  if (it == meta.end() || !it->is_string()) return {};
  return {it->get<std::string>()};
}
std::vector<std::string> by_owner_uid(const json& object) {
  std::vector<std::string> out;
  const json& meta = field(object, "metadata");
  if (auto it = meta.find("ownerReferences"); it != meta.end() && it->is_array())
    for (const auto& ref : *it)
      if (ref.is_object()) out.push_back(ref.value("uid", ""));
  return out;
}
std::vector<std::string> by_node_name(const json& object) {
  const json& spec = field(object, "spec");
  auto it = spec.find("nodeName");
  if (it == spec.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) return {};
  return {it->get<std::string>()};
}
std::vector<std::string> by_label(const json& object) {
  std::vector<std::string> out;
  const json& meta = field(object, "metadata");
  if (auto it = meta.find("labels"); it != meta.end() && it->is_object())
    for (const auto& [k, v] : it->items()) out.push_back(k + "=" + (v.is_string() ? v.get<std::string>() : v.dump()));
  return out;
}
}  // namespace index

void Store::add_index(const std::string& name, IndexFunc func) {
  std::unique_lock lock(mu_);
  index_funcs_[name] = std::move(func);
  indexes_[name];
}

void Store::add_standard_indexes() {
  add_index(index::kNamespace, index::by_namespace);
  add_index(index::kOwnerUid, index::by_owner_uid);
  add_index(index::kNodeName, index::by_node_name);
  add_index(index::kLabel, index::by_label);
}

void Store::unindex(const std::string& key, const json& object) {
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

void Store::reindex(const std::string& key, const json& object) {
  for (auto& [name, func] : index_funcs_)
    for (const auto& value : func(object)) indexes_[name][value].insert(key);
}

ObjectPtr Store::upsert(const std::string& key, ObjectPtr object) {
  std::unique_lock lock(mu_);
  auto& slot = objects_[key];
  ObjectPtr previous = std::move(slot);
  if (previous) unindex(key, *previous);
  reindex(key, *object);
  slot = std::move(object);
  return previous;
}

bool same_but_resource_version(const json& a, const json& b) {
  if (!a.is_object() || !b.is_object() || a.size() != b.size()) return a == b;
  for (auto it = a.begin(); it != a.end(); ++it) {
    auto other = b.find(it.key());
    if (other == b.end()) return false;
    if (it.key() != "metadata" || !it->is_object() || !other->is_object()) {
      if (*it != *other) return false;
      continue;
    }
    if (it->size() != other->size()) return false;
    for (auto m = it->begin(); m != it->end(); ++m) {
      if (m.key() == "resourceVersion") continue;
      auto n = other->find(m.key());
      if (n == other->end() || *n != *m) return false;
    }
  }
  return true;
}

bool Store::replace_if_same(const std::string& key, const ObjectPtr& object) {
  std::unique_lock lock(mu_);
  auto it = objects_.find(key);
  if (it == objects_.end() || !same_but_resource_version(*it->second, *object)) return false;
  it->second = object;
  return true;
}

ObjectPtr Store::erase(const std::string& key) {
  std::unique_lock lock(mu_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return nullptr;
  ObjectPtr previous = std::move(it->second);
  objects_.erase(it);
  unindex(key, *previous);
  return previous;
}

ObjectPtr Store::get(const std::string& key) const {
  std::shared_lock lock(mu_);
  auto it = objects_.find(key);
  return it == objects_.end() ? nullptr : it->second;
}

std::vector<ObjectPtr> Store::list() const {
  std::shared_lock lock(mu_);
  std::vector<ObjectPtr> out;
  out.reserve(objects_.size());
  for (const auto& [k, v] : objects_) out.push_back(v);
  return out;
}

std::vector<std::string> Store::keys() const {
  std::shared_lock lock(mu_);
  std::vector<std::string> out;
  out.reserve(objects_.size());
  for (const auto& [k, v] : objects_) out.push_back(k);
  return out;
}

std::vector<ObjectPtr> Store::by_index(const std::string& index_name, const std::string& value) const {
  std::shared_lock lock(mu_);
  std::vector<ObjectPtr> out;
  auto idx = indexes_.find(index_name);
  if (idx == indexes_.end()) return out;
  auto it = idx->second.find(value);
  if (it == idx->second.end()) return out;
  for (const auto& key : it->second)
    if (auto obj = objects_.find(key); obj != objects_.end()) out.push_back(obj->second);
  return out;
}

size_t Store::size() const {
  std::shared_lock lock(mu_);
  return objects_.size();
}

}  // namespace valley::kube
