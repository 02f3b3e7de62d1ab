#include "controllers/render/transfers.h"

namespace valley::render {
namespace {

using json = nlohmann::json;

json io_container(const api::TaskSpec& spec, const char* name, const std::vector<std::string>& args, const std::string& secret,
                  const json& mount) {
  json c = {{"name", name},
            {"image", spec.io_image.empty() ? kDefaultIoImage : spec.io_image},
            {"command", json::array({"valley-io"})},
            {"args", args},
            {"volumeMounts", json::array({mount})},
            // Small: it streams files. Its failure message is what the task's status shows.
            {"resources", {{"requests", {{"cpu", "50m"}, {"memory", "64Mi"}}}, {"limits", {{"memory", "256Mi"}}}}},
            {"terminationMessagePolicy", "FallbackToLogsOnError"}};
  if (!secret.empty()) c["envFrom"] = json::array({{{"secretRef", {{"name", secret}}}}});
  return c;
}

void push(json& object, const char* list, json item) {
  if (!object.contains(list) || !object[list].is_array()) object[list] = json::array();
  object[list].push_back(std::move(item));
}

}  // namespace

void add_transfers(const api::TaskSpec& spec, const std::string& role, json& pod_spec, json& container) {
  // Every pod knows where the workers find the data (a launcher hands it on to its ranks).
  if (spec.data) push(container, "env", {{"name", "VALLEY_DATA_DIR"}, {"value", spec.data->mount_path}});
  if (spec.data && role == "worker") {
    const std::string& dir = spec.data->mount_path;
    push(pod_spec, "initContainers",
         io_container(spec, kDataContainer, {"fetch", "--uri", spec.data->uri, "--dir", dir}, spec.data->secret,
                      {{"name", kDataContainer}, {"mountPath", dir}}));
    push(pod_spec, "volumes", {{"name", kDataContainer}, {"emptyDir", json::object()}});
    push(container, "volumeMounts", {{"name", kDataContainer}, {"mountPath", dir}, {"readOnly", true}});
  }
  if (spec.outputs) {
    json sidecar = io_container(spec, kOutputsContainer, {"keep", "--uri", spec.outputs->uri, "--dir", api::kOutputDir},
                                spec.outputs->secret, {{"name", kOutputsContainer}, {"mountPath", api::kOutputDir}});
    sidecar["restartPolicy"] = "Always";
    push(pod_spec, "initContainers", std::move(sidecar));
    push(pod_spec, "volumes", {{"name", kOutputsContainer}, {"emptyDir", json::object()}});
    push(container, "volumeMounts", {{"name", kOutputsContainer}, {"mountPath", api::kOutputDir}});
    push(container, "env", {{"name", "VALLEY_OUTPUT_DIR"}, {"value", api::kOutputDir}});
  }
}

}  // namespace valley::render
