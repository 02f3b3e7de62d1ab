#include "controllers/task/cache_fields.h"

#include <initializer_list>

namespace valley::task {
namespace {

using kube::FieldMask;

FieldMask lean_metadata() { return FieldMask::all_except({"managedFields", "annotations"}); }

// Of a condition, what the readers go by (not lastProbeTime, observedGeneration, heartbeats).
FieldMask condition() {
  return FieldMask::only({{"type", FieldMask::all()},
                          {"status", FieldMask::all()},
                          {"reason", FieldMask::all()},
                          {"message", FieldMask::all()},
                          {"lastTransitionTime", FieldMask::all()}});
}

}  // namespace

const std::shared_ptr<const FieldMask>& pod_fields() {
  static const auto mask = [] {
    const FieldMask container = FieldMask::only({{"name", FieldMask::all()}, {"resources", FieldMask::all()}});
    // A container's state: which one it is, its start, and how it ended.
    const FieldMask started = FieldMask::only({{"startedAt", FieldMask::all()}});
    const FieldMask ended = FieldMask::only({{"exitCode", FieldMask::all()},
                                             {"reason", FieldMask::all()},
                                             {"message", FieldMask::all()},
                                             {"startedAt", FieldMask::all()},
                                             {"finishedAt", FieldMask::all()}});
    const FieldMask state = FieldMask::only({{"running", started}, {"terminated", ended}, {"waiting", FieldMask::only({{"reason", FieldMask::all()}})}});
    const FieldMask container_status = FieldMask::only({{"name", FieldMask::all()},
                                                        {"state", state},
                                                        {"lastState", state},
                                                        {"ready", FieldMask::all()},
                                                        {"restartCount", FieldMask::all()}});
    return std::make_shared<const FieldMask>(FieldMask::only({
        {"apiVersion", FieldMask::all()},
        {"kind", FieldMask::all()},
        {"metadata", lean_metadata()},
        {"spec", FieldMask::only({{"nodeName", FieldMask::all()},
                                  {"affinity", FieldMask::all()},
                                  {"containers", container},
                                  {"initContainers", container}})},
        {"status", FieldMask::only({{"phase", FieldMask::all()},
                                    {"reason", FieldMask::all()},
                                    {"message", FieldMask::all()},
                                    {"startTime", FieldMask::all()},
                                    {"conditions", condition()},
                                    {"containerStatuses", container_status},
                                    {"initContainerStatuses", container_status}})},
    }));
  }();
  return mask;
}

const std::shared_ptr<const FieldMask>& node_fields() {
  static const auto mask = std::make_shared<const FieldMask>(FieldMask::only({
      {"apiVersion", FieldMask::all()},
      {"kind", FieldMask::all()},
      {"metadata", lean_metadata()},
      {"spec", FieldMask::all()},
      {"status", FieldMask::only({{"allocatable", FieldMask::all()},
                                  {"capacity", FieldMask::all()},
                                  {"conditions", condition()}})},
  }));
  return mask;
}

void lean_pod(nlohmann::json& pod) { pod_fields()->apply(pod); }
void lean_node(nlohmann::json& node) { node_fields()->apply(node); }

}  // namespace valley::task
