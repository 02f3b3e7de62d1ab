#include "controllers/api/seed.h"

#include <algorithm>
#include <map>

#include "controllers/api/spec.h"
#include "operator/json_text.h"

namespace valley::api {
namespace {

using json = nlohmann::json;

const std::vector<std::string> kKnown = {"TaskName", "Priority", "TaskType", "MaxReplicas", "MinReplicas", "AMDSupport",
                                         "ReduceCost", "TaskImage", "MasterImage", "WorkerImage", "MasterMaxReplicas",
                                         "WorkerMaxReplicas", "Namespace", "GPUsPerWorker", "EstimatedDuration", "MaxCost",
                                         "CheckpointURI", "Command"};

}  // namespace

bool is_seed_format(const json& document) { return document.is_object() && document.contains("TaskName"); }

json seed_to_task(const YamlDocument& doc, const std::string& default_namespace, std::vector<std::string>* errors) {
  std::vector<std::string> local;
  std::vector<std::string>& errs = errors ? *errors : local;
  std::map<std::string, int> line;
  for (const auto& [k, l] : doc.key_lines) line[k] = l;
  auto where = [&](const std::string& key) { return "line " + std::to_string(line.count(key) ? line[key] : 0) + ": " + key; };
  const json& d = doc.value;
  for (const auto& [k, v] : d.items()) {
    (void)v;
    if (std::find(kKnown.begin(), kKnown.end(), k) == kKnown.end()) errs.push_back(where(k) + ": unknown field");
  }
  auto str = [&](const char* key, bool required) -> std::string {
    if (!d.contains(key)) {
      if (required) errs.push_back(std::string(key) + ": required");
      return "";
    }
    if (!d[key].is_string()) {
      errs.push_back(where(key) + ": must be text");
      return "";
    }
    return d[key].get<std::string>();
  };
  auto integer = [&](const char* key) -> std::optional<int64_t> {
    if (!d.contains(key)) return std::nullopt;
    if (!d[key].is_number_integer()) {
      errs.push_back(where(key) + ": must be an integer");
      return std::nullopt;
    }
    return d[key].get<int64_t>();
  };
  auto boolean = [&](const char* key) -> bool {
    if (!d.contains(key)) return false;
    if (!d[key].is_boolean()) {
      errs.push_back(where(key) + ": must be true or false");
      return false;
    }
    return d[key].get<bool>();
  };
  const std::string name = str("TaskName", true);
  std::string type = d.contains("TaskType") ? str("TaskType", false) : "MPI";
  if (!parse_task_type(type)) errs.push_back(where("TaskType") + ": must be MPI, PyTorch or Single");
  json spec = {{"taskType", type}};
  if (auto p = integer("Priority")) spec["priority"] = *p;
  auto min = integer("MinReplicas"), max = integer("MaxReplicas"), worker_max = integer("WorkerMaxReplicas");
  if (type == "MPI" || type == "PyTorch") {
    int64_t hi = max.value_or(min.value_or(1));
    if (worker_max) hi = std::min(hi, *worker_max);  // the workers' own cap wins
    spec["replicas"] = {{"min", min.value_or(1)}, {"max", hi}};
  }
  if (type == "PyTorch") {
    // Workers only: TaskImage or WorkerImage; a launcher's image or replicas mean nothing here.
    std::string worker = str("WorkerImage", false);
    if (worker.empty()) worker = str("TaskImage", false);
    if (worker.empty()) errs.push_back("WorkerImage (or TaskImage): a PyTorch task needs a worker image");
    for (const char* key : {"MasterImage", "MasterMaxReplicas"})
      if (d.contains(key)) errs.push_back(where(key) + ": a PyTorch task has no launcher (its workers run torchrun)");
    spec["worker"] = {{"image", worker}};
  } else if (type == "MPI") {
    const std::string task_image = str("TaskImage", false);
    std::string master = str("MasterImage", false), worker = str("WorkerImage", false);
    if (master.empty()) master = task_image;
    if (worker.empty()) worker = task_image;
    if (master.empty() || worker.empty()) errs.push_back("MasterImage/WorkerImage (or TaskImage): an MPI task needs both images");
    spec["master"] = {{"image", master}};
    spec["worker"] = {{"image", worker}};
    if (auto mm = integer("MasterMaxReplicas"); mm && *mm < 1) errs.push_back(where("MasterMaxReplicas") + ": must be at least 1");
  } else {
    const std::string image = str("TaskImage", true);
    spec["image"] = image;
    spec["worker"] = json::object();
  }
  if (d.contains("GPUsPerWorker")) {
    const json& g = d["GPUsPerWorker"];
    if (g.is_number()) {
      std::string s = g.is_number_integer() ? std::to_string(g.get<int64_t>()) : json_text(g);
      spec["worker"]["gpus"] = s;
    } else if (g.is_string()) {
      spec["worker"]["gpus"] = g.get<std::string>();
    } else {
      errs.push_back(where("GPUsPerWorker") + ": must be a number like 1 or 0.5");
    }
  }
  if (boolean("AMDSupport")) spec["amdSupport"] = true;
  if (boolean("ReduceCost")) spec["reduceCost"] = true;
  if (auto s = str("EstimatedDuration", false); !s.empty()) spec["estimatedDuration"] = s;
  if (d.contains("MaxCost")) {
    const json& m = d["MaxCost"];
    if (m.is_string()) spec["maxCost"] = m.get<std::string>();
    else if (m.is_number_integer()) spec["maxCost"] = std::to_string(m.get<int64_t>());
    else if (m.is_number()) spec["maxCost"] = json_text(m);
    else errs.push_back(where("MaxCost") + ": must be an amount like 250.00");
  }
  if (auto s = str("CheckpointURI", false); !s.empty()) spec["checkpoint"] = {{"uri", s}};
  if (d.contains("Command")) {
    if (!d["Command"].is_array() || !std::all_of(d["Command"].begin(), d["Command"].end(), [](const json& x) { return x.is_string(); }))
      errs.push_back(where("Command") + ": must be a list of strings");
    else if (type == "MPI")
      spec["master"]["command"] = d["Command"];
    else if (type == "PyTorch")
      spec["worker"]["command"] = d["Command"];
    else
      spec["command"] = d["Command"];
  }
  std::string ns = d.contains("Namespace") ? str("Namespace", false) : default_namespace;
  json meta = {{"name", name}};
  if (!ns.empty()) meta["namespace"] = ns;
  return {{"apiVersion", "valley.dev/v1beta1"}, {"kind", "TrainingTask"}, {"metadata", meta}, {"spec", spec}};
}

}  // namespace valley::api
