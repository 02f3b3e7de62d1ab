// valleyctl's shared pieces (common.h).
#include "cmd/valleyctl/common.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>

#include "controllers/inputs/candidates.h"
#include "controllers/cost/engine.h"
#include "controllers/inputs/planner_config.h"
#include "controllers/cost/report.h"
#include "controllers/planner/scaling.h"
#include "controllers/inputs/snapshot.h"
#include "controllers/api/seed.h"
#include "controllers/api/spec.h"
#include "controllers/api/tenant.h"
#include "controllers/tenancy/tenants.h"
#include "operator/kube/json_fields.h"
#include "operator/duration.h"
#include "operator/kube/remote_clock.h"
#include "operator/kube/resource.h"
#include "operator/yaml_json.h"

#include "operator/flags.h"
#include "operator/kube/client.h"
#include "operator/kube/error.h"
#include "valley/version.h"
#include "operator/json_text.h"

namespace valley::ctl {


// The first document of a YAML file; exits with a clear message when it cannot be read.
std::optional<valley::YamlDocument> read_document(const std::string& path, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = path + ": cannot read";
    return std::nullopt;
  }
  std::stringstream s;
  s << in.rdbuf();
  auto docs = valley::parse_yaml(s.str(), error);
  if (!docs) {
    *error = path + ": " + *error;
    return std::nullopt;
  }
  if (docs->empty()) {
    *error = path + ": no document";
    return std::nullopt;
  }
  return docs->front();
}

// A TrainingTask object from FILE, in either format.
std::optional<json> read_task(const std::string& path, std::string* error) {
  auto doc = read_document(path, error);
  if (!doc) return std::nullopt;
  if (valley::api::is_seed_format(doc->value)) {
    std::vector<std::string> errors;
    json task = valley::api::seed_to_task(*doc, "default", &errors);
    if (!errors.empty()) {
      *error = path + " (seed format):";
      for (const auto& e : errors) *error += "\n  " + e;
      return std::nullopt;
    }
    return task;
  }
  if (doc->value.value("kind", "") != "TrainingTask") {
    *error = path + ": neither a TrainingTask nor the seed task format (TaskName: ...)";
    return std::nullopt;
  }
  return doc->value;
}

// Commands that talk to the cluster: an API error is a message and exit 1, never a crash.
int with_cluster(const std::function<int()>& command) {
  try {
    return command();
  } catch (const valley::kube::KubeError& e) {
    std::cerr << "valleyctl: " << e.what() << "\n";
    return 1;
  }
}

// Commands that take one argument: the usage line and exit 2 otherwise.
bool one_argument(const std::vector<std::string>& args, const char* usage) {
  if (args.size() == 2) return true;
  std::cerr << "usage: " << usage << "\n";
  return false;
}

std::unique_ptr<valley::kube::Client> connect(const valley::Flags& flags, std::string* ns) {
  auto config = valley::kube::load_default(flags.get("kubeconfig"), flags.get("context"));
  if (ns) *ns = flags.get("namespace").empty() ? config.default_namespace : flags.get("namespace");
  return std::make_unique<valley::kube::Client>(std::move(config));
}

void print(const valley::Flags& flags, const json& object) {
  if (flags.get("output") == "json") {
    std::cout << json_text(object, 2) << "\n";
  } else {
    std::cout << valley::to_yaml(object);
  }
}

// The task in FILE, or nullopt after telling the user what is wrong with it.
std::optional<json> read_task_or_report(const std::string& path) {
  std::string error;
  auto task = read_task(path, &error);
  if (!task) std::cerr << "valleyctl: " << error << "\n";
  return task;
}

std::string age(const std::string& rfc3339) {
  auto t = valley::kube::parse_time(rfc3339);
  if (!t) return "-";
  auto s = std::chrono::duration_cast<std::chrono::seconds>(kube::cluster_clock().now() - *t).count();
  if (s < 120) return std::to_string(s) + "s";
  if (s < 7200) return std::to_string(s / 60) + "m";
  if (s < 172800) return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
}


}  // namespace valley::ctl
