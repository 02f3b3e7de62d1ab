#include "controllers/task/cache_fields.h"

#include <initializer_list>

namespace valley::task {
namespace {

using json = nlohmann::json;

// The member `name` of `object`, or nullptr when it has none (or is no object).
json* member(json& object, const char* name) { return object.is_object() && object.contains(name) ? &object[name] : nullptr; }

// Keeps only the named members of `object` (when it is an object).
void keep(json& object, std::initializer_list<const char*> names) {
  if (!object.is_object()) return;
  json kept = json::object();
  for (const char* name : names)
    if (json* m = member(object, name)) kept[name] = std::move(*m);
  object = std::move(kept);
}

void keep_each(json& array, std::initializer_list<const char*> names) {
  if (!array.is_array()) return;
  for (auto& item : array) keep(item, names);
}

void lean_metadata(json& object) {
  if (json* meta = member(object, "metadata"); meta && meta->is_object()) {
    meta->erase("managedFields");
    meta->erase("annotations");
  }
}

}  // namespace

void lean_pod(json& pod) {
  if (!pod.is_object()) return;
  lean_metadata(pod);
  if (json* spec = member(pod, "spec")) {
    keep(*spec, {"nodeName", "affinity", "containers", "initContainers"});
    for (const char* list : {"containers", "initContainers"})
      if (json* items = member(*spec, list)) keep_each(*items, {"name", "resources"});
  }
  if (json* status = member(pod, "status")) {
    keep(*status, {"phase", "reason", "message", "startTime", "conditions", "containerStatuses", "initContainerStatuses"});
    for (const char* list : {"containerStatuses", "initContainerStatuses"})
      if (json* items = member(*status, list)) keep_each(*items, {"name", "state", "lastState", "ready", "restartCount"});
  }
  keep(pod, {"apiVersion", "kind", "metadata", "spec", "status"});
}

void lean_node(json& node) {
  if (!node.is_object()) return;
  lean_metadata(node);
  if (json* status = member(node, "status")) {
    keep(*status, {"allocatable", "capacity", "conditions"});
    if (json* conds = member(*status, "conditions"))
      keep_each(*conds, {"type", "status", "reason", "message", "lastTransitionTime"});
  }
  keep(node, {"apiVersion", "kind", "metadata", "spec", "status"});
}

}  // namespace valley::task
