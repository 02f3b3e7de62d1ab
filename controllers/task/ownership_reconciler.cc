#include "controllers/task/ownership_reconciler.h"

#include <spdlog/spdlog.h>

#include "controllers/render/render.h"
#include "operator/kube/error.h"

namespace valley::task {

OwnershipReconciler::OwnershipReconciler(kube::Api& client, ClusterCache& cache, const ControllerOptions& options)
    : client_(client), cache_(cache), options_(options), loop_("ownership", "ownership/", 1, [this](const std::string&) { return reconcile(); }) {}

bool OwnershipReconciler::is_published_object(const std::string& ns, const std::string& name) const {
  return name == options_.ownership_name && ns == options_.ownership_namespace;
}

Result OwnershipReconciler::reconcile() {
  if (!cache_.tenants().has_synced() || !cache_.namespaces().has_synced()) return Result::done();
  const Tenancy tenancy = cache_.tenancy();
  cache_.set_ownership(tenancy.ownership.owner);
  if (options_.ownership_name.empty()) return Result::done();
  nlohmann::json data = tenancy::published_ownership(tenancy.tenants, tenancy.ownership);
  if (auto current = cache_.configs().store().get(options_.ownership_namespace + "/" + options_.ownership_name);
      current && current->value("data", nlohmann::json::object()) == data)
    return Result::done();
  nlohmann::json object = {{"apiVersion", "v1"},
                           {"kind", "ConfigMap"},
                           {"metadata",
                            {{"name", options_.ownership_name},
                             {"namespace", options_.ownership_namespace},
                             {"labels", {{render::label::kManagedBy, "valley"}}},
                             {"annotations", {{"valley.dev/description", "namespace -> tenant, for the admission policies of deploy/policies (written by Valley)"}}}}},
                           {"data", data}};
  try {
    client_.apply(kube::resources::kConfigMaps, object, options_.field_manager);
  } catch (const kube::KubeError& e) {
    spdlog::warn("tenants: publishing namespace ownership in {}/{}: {}", options_.ownership_namespace, options_.ownership_name, e.what());
    return Result::retry();
  }
  return Result::done();
}

}  // namespace valley::task
