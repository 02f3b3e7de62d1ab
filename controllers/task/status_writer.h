// The one way Valley writes an object's status: through the status subresource, conditional on the
// resourceVersion the object carries (a stale cache can never apply a transition twice). What the
// answer means is decided here once: written, gone (404: nothing left to do), conflict (409: a newer
// version is coming through the informer; decide again), or failed (retry with backoff).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "operator/kube/api.h"

namespace valley::task {

struct StatusWrite {
  enum Outcome { Written, Gone, Conflict, Failed } outcome = Written;
  nlohmann::json answer;  // the object as written (Written)
  std::string error;      // otherwise
  // What the reconcile returns: done when written or gone, else retry.
  bool done() const { return outcome == Written || outcome == Gone; }
};

// `object` with its new status.
StatusWrite write_status(kube::Api& client, const kube::Resource& resource, const nlohmann::json& object);

}  // namespace valley::task
