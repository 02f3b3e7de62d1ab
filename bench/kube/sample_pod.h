// A realistic worker pod (as the API server returns it: defaults, token volume, status, managed
// fields) for client benchmarks, so figures are not flattered by toy objects.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace valley::bench {

// The pod as Valley would create it.
nlohmann::json sample_pod_spec(const std::string& name);
// The same pod as a watch event from the API server would carry it (metadata, defaults, status).
nlohmann::json sample_pod_from_server(const std::string& ns, const std::string& name, int resource_version);

}  // namespace valley::bench
