#include "controllers/task/policy_reconciler.h"

#include <spdlog/spdlog.h>

#include "controllers/api/conditions.h"
#include "controllers/inputs/nodepools.h"
#include "controllers/task/status_writer.h"
#include "operator/kube/remote_clock.h"
#include "operator/kube/timefmt.h"
#include "operator/text.h"

namespace valley::task {

PolicyReconciler::PolicyReconciler(kube::Api& client, kube::EventRecorder& events, ClusterCache& cache, const ControllerOptions& options,
                                   std::function<void()> in_force_changed)
    : client_(client),
      events_(events),
      cache_(cache),
      options_(options),
      in_force_changed_(std::move(in_force_changed)),
      loop_("pricingpolicy", "pricingpolicy/", 1, [this](const std::string& name) { return reconcile(name); }) {}

Result PolicyReconciler::reconcile(const std::string& name) {
  // An operator of one namespace speaks for the policy it prices by only: the others are other
  // instances' to judge (each writing every policy's status would make them fight over it).
  if (!options_.watch_namespace.empty() && name != options_.pricing_policy) return Result::done();
  kube::ObjectPtr object = cache_.pricing().store().get(name);
  std::shared_ptr<const cost::Policy> parsed;
  std::vector<std::string> errors;
  if (object) {
    if (auto p = cost::parse_policy(*object, &errors)) parsed = std::make_shared<const cost::Policy>(std::move(*p));
    if (!parsed && errors.empty()) errors.push_back("invalid");
  }
  if (name == options_.pricing_policy) {
    cache_.set_policy(parsed);
    spdlog::info("pricing policy {}: {}", name, !object ? "absent: tasks are not priced" : parsed ? "in use" : "invalid: " + errors.front());
    in_force_changed_();
  }
  if (!object) return Result::done();
  const nlohmann::json current = object->value("status", nlohmann::json::object());
  const std::string now = kube::format_time(kube::cluster_clock().now());
  nlohmann::json status = api::policy_status(*object, errors, parsed ? parsed->currency : "", options_.pricing_policy, now);
  // With an instance catalogue, the policy in force also says what Valley can buy (a NodePool it
  // cannot price or fill would otherwise only be a log line).
  if (name == options_.pricing_policy && !options_.instance_types.types.empty()) {
    const auto usable = inputs::pools_usable(cache_.node_pool_list(), options_.instance_types, cache_.node_facts());
    api::set_condition(status, "NodePoolsUsable", usable.all, usable.reason, utf8_head(usable.message, 2000), now,
                       status.value("observedGeneration", int64_t{0}));
  }
  // Written only when it changes: the transition times are kept, so an unchanged status compares equal.
  if (current.is_object() && current.value("conditions", nlohmann::json()) == status["conditions"] &&
      current.value("observedGeneration", int64_t{-1}) == status["observedGeneration"])
    return Result::done();
  nlohmann::json updated = *object;
  updated["status"] = status;
  if (const StatusWrite w = write_status(client_, kube::resources::kPricingPolicies, updated); w.outcome != StatusWrite::Written)
    return w.done() ? Result::done() : Result::retry();
  if (!parsed) {
    std::string message;
    for (const auto& e : errors) message += (message.empty() ? "" : "; ") + e;
    events_.warning(*object, "InvalidPolicy", "Validate", utf8_head(message, 1000));
  }
  return Result::done();
}

}  // namespace valley::task
