#include "operator/kube/store.h"

#include <mutex>

#include "operator/kube/client.h"
#include "operator/json_text.h"

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
    for (const auto& [k, v] : it->items()) out.push_back(k + "=" + (v.is_string() ? v.get<std::string>() : json_text(v)));
  return out;
}
}  // namespace index

void add_standard_indexes(Store& store) {
  store.add_index(index::kNamespace, index::by_namespace);
  store.add_index(index::kOwnerUid, index::by_owner_uid);
  store.add_index(index::kNodeName, index::by_node_name);
  store.add_index(index::kLabel, index::by_label);
}

std::string ObjectTraits<json>::key(const json& o) { return object_key(o); }
std::string ObjectTraits<json>::resource_version(const json& o) { return resource_version_of(o); }
void ObjectTraits<json>::add_indexes(BasicStore<json>& store) { add_standard_indexes(store); }

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

}  // namespace valley::kube
