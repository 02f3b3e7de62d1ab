// valley-operator's flags (VALLEY_<FLAG> in the environment too) and the options they become.
#pragma once

#include "controllers/task/options.h"
#include "operator/flags.h"
#include "operator/kube/http.h"
#include "operator/manager.h"

namespace valley::op {

Flags make_flags();

struct OperatorOptions {
  ManagerOptions manager;
  kube::HttpOptions http;
  task::ControllerOptions controllers;
};
// The options the parsed flags say; std::invalid_argument (or std::out_of_range) naming the flag
// when one is not valid. The leader Lease's namespace and the tenancy ConfigMap's are filled in
// once the kubeconfig is known (with_namespace).
OperatorOptions parse_options(const Flags& flags);
void with_namespace(OperatorOptions& o, const Flags& flags, const std::string& default_namespace);

}  // namespace valley::op
