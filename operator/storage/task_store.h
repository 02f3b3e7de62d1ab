// A TrainingTask's s3:// store as the operator and valleyctl reach it: the credentials and endpoint from the task's
// Secret (read through the API server), for the checkpoint record, the data check and the outputs.
#pragma once

#include <memory>
#include <string>

#include "operator/kube/api.h"
#include "operator/storage/object_store.h"

namespace valley::storage {

// nullptr + error ("<what> Secret ns/name: ...", "<what> store <uri>: ...") when the Secret cannot be
// read or holds no usable keys; `what` names the spec field ("checkpoint", "data", "outputs"). Read
// with the operator's bounds (with_operator_bounds), connecting to none of `denied_cidrs`.
std::unique_ptr<ObjectStore> open_task_store(kube::Api& client, const std::string& ns, const std::string& secret,
                                             const std::string& uri, const std::string& what, std::string* error,
                                             const std::vector<std::string>& denied_cidrs = {});

}  // namespace valley::storage
