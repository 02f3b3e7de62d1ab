// Adding and removing one finalizer of an object, each by a JSON patch that tests what the caller
// last saw, so another controller's finalizer written meanwhile is never dropped: removal tests the
// entry at its index; addition tests the resourceVersion. Each returns true when done (or the object
// is gone), false when it should be retried on a fresher copy (the test failed, a conflict, an error).
#pragma once

#include <string>
#include <vector>

#include "operator/kube/api.h"

namespace valley::kube {

// `finalizers`: the object's list as the caller saw it.
bool remove_finalizer(Api& client, const Resource& r, const std::string& ns, const std::string& name,
                      const std::vector<std::string>& finalizers, const std::string& finalizer);
bool add_finalizer(Api& client, const Resource& r, const std::string& ns, const std::string& name,
                   const std::vector<std::string>& finalizers, const std::string& resource_version, const std::string& finalizer);

}  // namespace valley::kube
