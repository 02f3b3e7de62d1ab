#include "operator/kube/finalizers.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "operator/kube/error.h"

namespace valley::kube {

namespace {
bool send(Api& client, const Resource& r, const std::string& ns, const std::string& name, const nlohmann::json& patch) {
  try {
    client.patch(r, ns, name, PatchType::JSON, patch);
  } catch (const KubeError& e) {
    if (e.http_status() == 404) return true;
    spdlog::debug("{}/{}: finalizers: {}", ns, name, e.what());
    return false;  // 422 (the test failed) or 409: the informer brings the fresh object
  }
  return true;
}
}  // namespace

bool remove_finalizer(Api& client, const Resource& r, const std::string& ns, const std::string& name,
                      const std::vector<std::string>& finalizers, const std::string& finalizer) {
  const auto it = std::find(finalizers.begin(), finalizers.end(), finalizer);
  if (it == finalizers.end()) return true;
  const std::string path = "/metadata/finalizers/" + std::to_string(it - finalizers.begin());
  return send(client, r, ns, name, nlohmann::json::array({{{"op", "test"}, {"path", path}, {"value", finalizer}}, {{"op", "remove"}, {"path", path}}}));
}

bool add_finalizer(Api& client, const Resource& r, const std::string& ns, const std::string& name,
                   const std::vector<std::string>& finalizers, const std::string& resource_version, const std::string& finalizer) {
  if (std::find(finalizers.begin(), finalizers.end(), finalizer) != finalizers.end()) return true;
  nlohmann::json add = finalizers.empty() ? nlohmann::json{{"op", "add"}, {"path", "/metadata/finalizers"}, {"value", {finalizer}}}
                                          : nlohmann::json{{"op", "add"}, {"path", "/metadata/finalizers/-"}, {"value", finalizer}};
  return send(client, r, ns, name,
              nlohmann::json::array({{{"op", "test"}, {"path", "/metadata/resourceVersion"}, {"value", resource_version}}, std::move(add)}));
}

}  // namespace valley::kube
