// valleyctl's shared pieces: reading a task file in either format, connecting to the cluster,
// printing objects, and the commands' entry points (one file per group of commands).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/flags.h"
#include "operator/kube/client.h"
#include "operator/yaml_json.h"

namespace valley::ctl {

using json = nlohmann::json;

// The first document of a YAML file; nullopt with *error set when it cannot be read.
std::optional<YamlDocument> read_document(const std::string& path, std::string* error);
// A TrainingTask object from FILE, in either format (TrainingTask or the seed task format).
std::optional<json> read_task(const std::string& path, std::string* error);
// The task in FILE, or nullopt after telling the user what is wrong with it.
std::optional<json> read_task_or_report(const std::string& path);
// Commands that talk to the cluster: an API error is a message and exit 1, never a crash.
int with_cluster(const std::function<int()>& command);
// Commands that take one argument: false (after printing the usage line) otherwise.
bool one_argument(const std::vector<std::string>& args, const char* usage);
// A client from --kubeconfig/--context; *ns (when given) is -n, else the kubeconfig's namespace.
std::unique_ptr<kube::Client> connect(const Flags& flags, std::string* ns);
// The object as YAML, or JSON with -o json.
void print(const Flags& flags, const json& object);
// How long ago an RFC 3339 time was: "40s", "12m", "5h", "3d" ("-" when unreadable).
std::string age(const std::string& rfc3339);

int cmd_submit(const Flags& flags, const std::vector<std::string>& args);
int cmd_list(const Flags& flags);
int cmd_cost(const Flags& flags);
int cmd_describe(const Flags& flags, const std::vector<std::string>& args);
int cmd_estimate(const Flags& flags, const std::vector<std::string>& args);
int cmd_version(const Flags& flags);
int cmd_tenants(const Flags& flags);
int cmd_capacity(const Flags& flags);
int cmd_outputs(const Flags& flags, const std::vector<std::string>& args);
int cmd_report(const Flags& flags, const std::vector<std::string>& args);
int cmd_migrate_storage(const Flags& flags);

}  // namespace valley::ctl
