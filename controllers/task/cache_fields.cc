#include "controllers/task/cache_fields.h"

#include <initializer_list>

#include "controllers/api/dra.h"
#include "controllers/api/pod.h"

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
    const FieldMask all = FieldMask::all();
    const FieldMask container = FieldMask::only({{"name", all}, {"resources", all}, {"restartPolicy", all}});
    // And of the containers' environment, names and values: the first one's holds Valley's sealed
    // records (api::kRecordsEnv).
    const FieldMask env = FieldMask::only({{"name", all}, {"value", all}});
    const FieldMask container_and_env = FieldMask::only({{"name", all}, {"resources", all}, {"restartPolicy", all}, {"env", env}});
    // A container's state: which one it is, its start, how it ended or why it waits; of the last
    // one, its start.
    const FieldMask started = FieldMask::only({{"startedAt", all}});
    const FieldMask why = FieldMask::only({{"reason", all}, {"message", all}});
    const FieldMask ended = FieldMask::only({{"exitCode", all}, {"reason", all}, {"message", all}, {"startedAt", all}, {"finishedAt", all}});
    const FieldMask container_status = FieldMask::only({{"name", all},
                                                        {"state", FieldMask::only({{"running", started}, {"terminated", ended}, {"waiting", why}})},
                                                        {"lastState", FieldMask::only({{"terminated", started}})}});
    return std::make_shared<const FieldMask>(FieldMask::only({
        {"metadata", FieldMask::only({{"name", all},
                                      {"namespace", all},
                                      {"uid", all},
                                      {"resourceVersion", all},
                                      {"labels", all},
                                      {"ownerReferences", FieldMask::only({{"uid", all}})},
                                      {"finalizers", all},
                                      {"deletionTimestamp", all},
                                      {"annotations", FieldMask::only({{api::kHostfileAnnotation, all}, {api::kClaimedGpusAnnotation, all}, {api::kGpuSeatAnnotation, all}, {api::kMpsReplicasAnnotation, all},
                                                                        {api::kTimeSlicedReplicasAnnotation, all}, {api::kPricedAsAnnotation, all}})}})},
        {"spec", FieldMask::only({{"nodeName", all},
                                  {"affinity", FieldMask::only({{"nodeAffinity", FieldMask::only({{"requiredDuringSchedulingIgnoredDuringExecution", all}})}})},
                                  {"containers", container_and_env},
                                  {"initContainers", container},
                                  {"resourceClaims", FieldMask::only({{"name", all}, {"resourceClaimName", all}})}})},
        {"status", FieldMask::only({{"phase", all},
                                    {"reason", all},
                                    {"startTime", all},
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

const std::shared_ptr<const FieldMask>& claim_fields() {
  static const auto mask = [] {
    const FieldMask all = FieldMask::all();
    const FieldMask result = FieldMask::only({{"driver", all}, {"pool", all}, {"device", all}});
    return std::make_shared<const FieldMask>(FieldMask::only({
        {"metadata", FieldMask::only({{"name", all}, {"namespace", all}, {"uid", all}, {"resourceVersion", all}, {"labels", all},
                                      {"creationTimestamp", all}, {"deletionTimestamp", all},
                                      {"annotations", FieldMask::only({{api::kSeatsNodeAnnotation, all}})}})},
        {"status", FieldMask::only({{"allocation", FieldMask::only({{"devices", FieldMask::only({{"results", result}})}})}})},
    }));
  }();
  return mask;
}

void lean_pod(nlohmann::json& pod) { pod_fields()->apply(pod); }
void lean_claim(nlohmann::json& claim) { claim_fields()->apply(claim); }
void lean_node(nlohmann::json& node) { node_fields()->apply(node); }

}  // namespace valley::task
