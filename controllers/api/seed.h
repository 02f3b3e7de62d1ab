// The seed platform's task format (TaskName, Priority, TaskType, MaxReplicas, ...; see
// deploy/samples/training1-seed.yaml for the mapping) turned into a TrainingTask object, purely.
// Unknown or mistyped fields are errors with their line, never silently dropped.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "operator/yaml_json.h"

namespace valley::api {

// True when the document looks like the seed format (has TaskName) rather than a TrainingTask.
bool is_seed_format(const nlohmann::json& document);

// The TrainingTask for a seed document; errors ("line 4: MinReplicas: must be an integer") when
// the document cannot be converted.
nlohmann::json seed_to_task(const YamlDocument& document, const std::string& default_namespace, std::vector<std::string>* errors);

}  // namespace valley::api
