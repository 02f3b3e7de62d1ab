// A TrainingTask's status as the controllers read it back. The status is Valley's own record, but it
// comes from the API server: an older CRD, a hand edit through the status subresource or a restore
// from backup can leave a field of another type than the CRD declares, or null. Readers then use
// json::value() and get<T>() freely, because readable_status() has dropped every such field, as if
// it were absent. The declared types below mirror crds/valley.dev_trainingtasks.yaml (a unit test
// keeps them equal); a field the CRD does not declare is kept as it is.
#pragma once

#include <nlohmann/json.hpp>

namespace valley::api {

// The declared types: {"phase": "string", "restarts": {"total": "integer", ...}, "scaling":
// [{"workers": "integer", ...}], ...}; "integer", "number", "string", "boolean" or "object" (a map,
// read as it is) at the leaves.
const nlohmann::json& status_schema();

// `status` with every declared field of the wrong type (or null) removed, and list items that are
// not objects dropped from declared lists. A status that is not an object reads as {}.
nlohmann::json readable_status(const nlohmann::json& status);

// The TrainingTask as the controllers decide on it (lifecycle::Observed::task): its status through
// readable_status, every other field as it is; the status is copied once. {"status": {}} for a
// task that is not an object.
nlohmann::json readable_task(const nlohmann::json& task);

}  // namespace valley::api
