#include "controllers/api/spec.h"

#include "controllers/api/money.h"
#include "controllers/api/template_guard.h"
#include "controllers/api/vendors.h"

#include "operator/kube/json_fields.h"
#include "operator/kube/timefmt.h"

#include "operator/storage/object_store.h"

#include <algorithm>
#include <cctype>
#include <regex>

#include "operator/duration.h"
#include "operator/json_text.h"

namespace valley::api {
namespace {

// A DNS subdomain (RFC 1123): what Kubernetes allows as the name of a Secret, a claim or a class.
bool is_dns_subdomain(const std::string& name) {
  static const std::regex subdomain("^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$");
  return std::regex_match(name, subdomain);
}

// Reads typed fields and collects an error, with the field path, for each that is wrong.
class Reader {
 public:
  explicit Reader(std::vector<std::string>& errors) : errors_(errors) {}

  const json* object(const json& parent, const std::string& key, const std::string& path) {
    auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return nullptr;
    if (!it->is_object()) {
      errors_.push_back(path + ": must be an object");
      return nullptr;
    }
    return &*it;
  }
  std::optional<std::string> str(const json& parent, const std::string& key, const std::string& path) {
    auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return std::nullopt;
    if (!it->is_string()) {
      errors_.push_back(path + ": must be a string");
      return std::nullopt;
    }
    return it->get<std::string>();
  }
  std::optional<int64_t> integer(const json& parent, const std::string& key, const std::string& path, int64_t lo,
                                 int64_t hi) {
    auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return std::nullopt;
    if (!it->is_number_integer()) {
      errors_.push_back(path + ": must be an integer");
      return std::nullopt;
    }
    int64_t v = it->get<int64_t>();
    if (v < lo || v > hi) {
      errors_.push_back(path + ": must be between " + std::to_string(lo) + " and " + std::to_string(hi));
      return std::nullopt;
    }
    return v;
  }
  std::optional<bool> boolean(const json& parent, const std::string& key, const std::string& path) {
    auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return std::nullopt;
    if (!it->is_boolean()) {
      errors_.push_back(path + ": must be true or false");
      return std::nullopt;
    }
    return it->get<bool>();
  }
  std::vector<std::string> strings(const json& parent, const std::string& key, const std::string& path) {
    std::vector<std::string> out;
    auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return out;
    if (!it->is_array()) {
      errors_.push_back(path + ": must be a list of strings");
      return out;
    }
    for (const auto& v : *it) {
      if (!v.is_string()) {
        errors_.push_back(path + ": must be a list of strings");
        return {};
      }
      out.push_back(v.get<std::string>());
    }
    return out;
  }
  void error(const std::string& e) { errors_.push_back(e); }
  size_t error_count() const { return errors_.size(); }

 private:
  std::vector<std::string>& errors_;
};

// spec.vendors and the older spec.amdSupport, into TaskSpec::vendors (kVendors order).
void parse_vendors(Reader& r, const json* spec, TaskSpec& s) {
  std::vector<std::string> listed = {"nvidia"};
  if (spec->contains("vendors")) {
    listed = r.strings(*spec, "vendors", "spec.vendors");
    if (listed.empty()) r.error("spec.vendors: list at least one of nvidia, amd, intel");
    for (const auto& v : listed)
      if (!is_vendor(v)) r.error("spec.vendors: \"" + v + "\" is not one of nvidia, amd, intel");
  }
  if (r.boolean(*spec, "amdSupport", "spec.amdSupport").value_or(false)) listed.push_back("amd");
  s.vendors.clear();
  for (const char* v : kVendors)
    if (std::find(listed.begin(), listed.end(), v) != listed.end()) s.vendors.push_back(v);
}

ContainerSpec container(Reader& r, const json& c, const std::string& path) {
  ContainerSpec out;
  out.image = r.str(c, "image", path + ".image").value_or("");
  if (auto amd = r.str(c, "amdImage", path + ".amdImage")) out.vendor_images["amd"] = *amd;
  if (const json* images = r.object(c, "vendorImages", path + ".vendorImages"))
    for (const auto& [vendor, image] : images->items()) {
      if (!is_vendor(vendor) || !image.is_string() || image.get<std::string>().empty())
        r.error(path + ".vendorImages." + vendor + ": must be an image, for nvidia, amd or intel");
      else if (vendor == "amd" && out.vendor_images.count("amd") && out.vendor_images["amd"] != image.get<std::string>())
        r.error(path + ".vendorImages.amd: differs from amdImage; give one");
      else
        out.vendor_images[vendor] = image.get<std::string>();
    }
  out.command = r.strings(c, "command", path + ".command");
  out.args = r.strings(c, "args", path + ".args");
  if (const json* res = r.object(c, "resources", path + ".resources")) {
    for (const auto& refusal : resource_escapes(*res, path + ".resources")) r.error(refusal);
    out.resources = *res;
  }
  if (const json* t = r.object(c, "template", path + ".template")) {
    for (const auto& refusal : template_escapes(*t, path + ".template")) r.error(refusal);
    out.pod_template = *t;
  }
  return out;
}

// o.secretRef.name, when o has a secretRef: a Secret of the task's namespace, so a DNS subdomain (a
// name with a "/" or ".." could otherwise address another namespace's Secret through a request path).
std::optional<std::string> secret_ref(Reader& r, const json& o, const std::string& path) {
  const json* ref = r.object(o, "secretRef", path + ".secretRef");
  if (!ref) return std::nullopt;
  std::string name = r.str(*ref, "name", path + ".secretRef.name").value_or("");
  if (!is_dns_subdomain(name)) {
    r.error(path + ".secretRef.name: must name a Secret of the task's namespace (lower-case letters, digits, '-' and '.', at most 253)");
    return std::string();
  }
  return name;
}

// spec.worker.devices (TaskSpec::Devices). A fraction of a GPU takes a whole device, or a seat on
// one where the driver shares devices (planner.h, Node::dra_shared).
std::optional<TaskSpec::Devices> parse_devices(Reader& r, const json& d) {
  static const std::regex attribute("^([a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?/)?[A-Za-z_][A-Za-z0-9_]{0,31}$");
  TaskSpec::Devices out;
  const size_t errors_before = r.error_count();
  out.device_class = r.str(d, "deviceClassName", "spec.worker.devices.deviceClassName").value_or("");
  if (!is_dns_subdomain(out.device_class))
    r.error("spec.worker.devices.deviceClassName: must name a DeviceClass (a DNS subdomain such as gpu.nvidia.com)");
  if (const json* m = r.object(d, "matchAttributes", "spec.worker.devices.matchAttributes")) {
    for (const auto& [name, value] : m->items()) {
      const std::string path = "spec.worker.devices.matchAttributes." + name;
      if (!std::regex_match(name, attribute))
        r.error(path + ": an attribute name is a C identifier of up to 32 characters, optionally after its domain and a slash");
      else if (!value.is_string() || value.get<std::string>().empty() || value.get<std::string>().size() > 64)
        r.error(path + ": must be a string of 1 to 64 characters");
      else
        out.match_attributes[name] = value.get<std::string>();
    }
  }
  if (r.error_count() != errors_before) return std::nullopt;
  return out;
}

std::optional<GpuRequest> parse_gpus(const std::string& text) {
  // "1", "8", "0.5", "0.125": whole GPUs or a fraction below one, to a thousandth.
  if (text.empty() || text.size() > 5) return std::nullopt;
  if (text.find('.') == std::string::npos) {
    for (char c : text)
      if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    int n = std::stoi(text);
    if (n < 1 || n > 999) return std::nullopt;
    return GpuRequest{n * 1000};
  }
  if (text.rfind("0.", 0) != 0 || text.size() < 3) return std::nullopt;
  std::string frac = text.substr(2);
  for (char c : frac)
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  while (frac.size() < 3) frac += '0';
  int milli = std::stoi(frac.substr(0, 3));
  if (milli == 0) return std::nullopt;
  return GpuRequest{milli};
}

}  // namespace

std::optional<IdlePolicy> parse_idle_policy(const json& o, const std::string& path, std::vector<std::string>* errors) {
  Reader r(*errors);
  const size_t before = errors->size();
  IdlePolicy p;
  const std::string action = r.str(o, "action", path + ".action").value_or("Report");
  if (action == "Report") p.action = IdleAction::Report;
  else if (action == "Shrink") p.action = IdleAction::Shrink;
  else if (action == "Suspend") p.action = IdleAction::Suspend;
  else errors->push_back(path + ".action: must be Report, Shrink or Suspend");
  p.below_percent = static_cast<int>(r.integer(o, "belowPercent", path + ".belowPercent", 1, 100).value_or(5));
  if (auto after = r.str(o, "after", path + ".after")) {
    auto d = parse_duration(*after);
    if (!d || *d < std::chrono::minutes(1) || *d > std::chrono::hours(24 * 7))
      errors->push_back(path + ".after: \"" + *after + "\" is not a duration from 1m to 168h");
    else
      p.after = std::chrono::duration_cast<std::chrono::seconds>(*d);
  }
  if (errors->size() != before) return std::nullopt;
  return p;
}

namespace {

// A PyTorch worker's command may start torchrun itself (for flags of its own), but the rendezvous
// and the number of nodes are Valley's: it sets them from the task (render.h).
void check_torchrun_command(Reader& r, const ContainerSpec& worker) {
  static const char* const kValleys[] = {"nnodes", "rdzv-endpoint", "rdzv_endpoint", "rdzv-backend", "rdzv_backend", "rdzv-id",
                                         "rdzv_id", "node-rank", "node_rank", "master-addr", "master_addr", "master-port",
                                         "master_port", "standalone"};
  if (worker.command.empty() || worker.command.front() != "torchrun") return;
  std::vector<std::string> words(worker.command.begin() + 1, worker.command.end());
  words.insert(words.end(), worker.args.begin(), worker.args.end());
  bool value_next = false;  // the word after a flag without '=' may be its value
  for (const auto& word : words) {
    if (word.rfind('-', 0) != 0) {
      if (!value_next) break;  // the script: what follows is its own
      value_next = false;
      continue;
    }
    const size_t eq = word.find('='), start = word.find_first_not_of('-');
    value_next = eq == std::string::npos;
    if (start == std::string::npos || (eq != std::string::npos && eq < start)) continue;
    const std::string flag = word.substr(start, eq == std::string::npos ? std::string::npos : eq - start);
    for (const char* ours : kValleys)
      if (flag == ours)
        r.error("spec.worker.command: --" + flag + " is Valley's to set (from spec.replicas and the task's rendezvous on worker 0); remove it");
  }
}

// Sections of spec, each adding to s and reporting through r.
// What runs: the type, priority, replicas, elasticity, the worker and launcher containers.
void parse_shape(Reader& r, const json* spec, TaskSpec& s) {
  std::string type = r.str(*spec, "taskType", "spec.taskType").value_or("MPI");
  if (auto parsed = parse_task_type(type))
    s.type = *parsed;
  else
    r.error("spec.taskType: must be MPI, PyTorch or Single, not \"" + type + "\"");
  s.priority = static_cast<int>(r.integer(*spec, "priority", "spec.priority", 0, 100).value_or(0));
  s.priority_set = spec->contains("priority") && (*spec)["priority"].is_number_integer();

  if (const json* rep = r.object(*spec, "replicas", "spec.replicas")) {
    s.min_workers = static_cast<int>(r.integer(*rep, "min", "spec.replicas.min", 1, 10000).value_or(1));
    s.max_workers = static_cast<int>(r.integer(*rep, "max", "spec.replicas.max", 1, 10000).value_or(s.min_workers));
    if (auto t = r.integer(*rep, "target", "spec.replicas.target", 1, 10000)) s.target_workers = static_cast<int>(*t);
  }
  if (s.min_workers > s.max_workers) r.error("spec.replicas.min: must not exceed spec.replicas.max");
  if (s.target_workers && (*s.target_workers < s.min_workers || *s.target_workers > s.max_workers))
    r.error("spec.replicas.target: must lie within spec.replicas.min..max");

  parse_vendors(r, spec, s);
  std::string elasticity = r.str(*spec, "elasticity", "spec.elasticity").value_or(s.type == TaskType::PyTorch ? "Hot" : "Restart");
  if (elasticity == "Hot") {
    s.hot_elastic = true;
  } else if (elasticity != "Restart") {
    r.error("spec.elasticity: must be Restart or Hot");
  }
  s.reduce_cost = r.boolean(*spec, "reduceCost", "spec.reduceCost").value_or(false);
  if (const json* topo = r.object(*spec, "topology", "spec.topology")) {
    auto required = r.str(*topo, "required", "spec.topology.required");
    auto preferred = r.str(*topo, "preferred", "spec.topology.preferred");
    if (required.has_value() == preferred.has_value())
      r.error("spec.topology: give exactly one of required and preferred (a level name such as rack)");
    else if ((required ? *required : *preferred).empty() || (required ? *required : *preferred).size() > 63)
      r.error("spec.topology: the level name must be 1 to 63 characters");
    else
      s.topology = TaskSpec::Topology{required ? *required : *preferred, required.has_value()};
  }

  if (const json* w = r.object(*spec, "worker", "spec.worker")) {
    s.worker = container(r, *w, "spec.worker");
    std::string gpus = r.str(*w, "gpus", "spec.worker.gpus").value_or("1");
    if (auto g = parse_gpus(gpus)) {
      s.gpus = *g;
    } else {
      r.error("spec.worker.gpus: \"" + gpus + "\" is not a whole number of GPUs (1-999) or a fraction below 1 like 0.5");
    }
    s.slots_per_worker = static_cast<int>(r.integer(*w, "slotsPerWorker", "spec.worker.slotsPerWorker", 1, 1024)
                                              .value_or(s.type == TaskType::PyTorch ? std::max(1, s.gpus.count()) : 1));
    if (const json* d = r.object(*w, "devices", "spec.worker.devices")) s.devices = parse_devices(r, *d);
    if (const json* sh = r.object(*w, "sharing", "spec.worker.sharing"); sh && r.boolean(*sh, "allowed", "spec.worker.sharing.allowed").value_or(false)) {
      s.sharing_profile = r.str(*sh, "profile", "spec.worker.sharing.profile").value_or("");
    }
  }
  if (const json* m = r.object(*spec, "master", "spec.master")) s.launcher = container(r, *m, "spec.master");

  if (s.type == TaskType::Single) {
    // A Single task's pod may be described at the top (image/command/args) or as its worker.
    if (auto img = r.str(*spec, "image", "spec.image")) s.worker.image = *img;
    if (auto cmd = r.strings(*spec, "command", "spec.command"); !cmd.empty()) s.worker.command = cmd;
    if (auto args = r.strings(*spec, "args", "spec.args"); !args.empty()) s.worker.args = args;
    if (s.worker.image.empty()) r.error("spec.image: a Single task needs an image");
    if (s.max_workers != 1) r.error("spec.replicas.max: a Single task runs one pod");
  } else if (s.type == TaskType::PyTorch) {
    if (spec->contains("master")) r.error("spec.master: a PyTorch task has no launcher (its workers run torchrun)");
    if (s.worker.image.empty()) r.error("spec.worker.image: a PyTorch task needs a worker image");
    if (s.worker.command.empty()) r.error("spec.worker.command: a PyTorch task needs the command torchrun runs on each worker (such as [python3, train.py])");
    check_torchrun_command(r, s.worker);
  } else {
    if (s.launcher.image.empty()) r.error("spec.master.image: an MPI task needs a launcher image");
    if (s.worker.image.empty()) r.error("spec.worker.image: an MPI task needs a worker image");
  }
  if (s.sharing_profile && s.sharing_profile->empty()) s.sharing_profile = s.worker.image;
  for (const auto& [vendor, image] : s.worker.vendor_images)
    if (!s.runs_on(vendor))
      r.error(vendor == "amd" ? "spec.worker.amdImage: only used with spec.amdSupport true (or amd in spec.vendors)"
                              : "spec.worker.vendorImages." + vendor + ": " + vendor + " is not in spec.vendors");

}

// How it runs: idle policy, Pod Security, checkpoints.
void parse_policies(Reader& r, const json* spec, TaskSpec& s, std::vector<std::string>* errors) {
  if (const json* ip = r.object(*spec, "idlePolicy", "spec.idlePolicy")) {
    if (auto p = parse_idle_policy(*ip, "spec.idlePolicy", errors)) s.idle_policy = *p;
  }
  if (const json* ps = r.object(*spec, "podSecurity", "spec.podSecurity")) {
    if (auto level = r.str(*ps, "level", "spec.podSecurity.level")) {
      if (*level == "Restricted") s.pod_security.level = PodSecurityLevel::Restricted;
      else if (*level == "Baseline") s.pod_security.level = PodSecurityLevel::Baseline;
      else r.error("spec.podSecurity.level: must be Baseline or Restricted");
    }
    s.pod_security.run_as_user = r.integer(*ps, "runAsUser", "spec.podSecurity.runAsUser", 1, 2147483647).value_or(1000);
  }
  if (const json* c = r.object(*spec, "checkpoint", "spec.checkpoint")) {
    s.checkpoint_uri = r.str(*c, "uri", "spec.checkpoint.uri").value_or("");
    std::string why;
    auto location = storage::parse_location(s.checkpoint_uri, &why);
    if (!location || location->scheme == storage::Location::Scheme::File)
      r.error("spec.checkpoint.uri: " + (location ? std::string("must start with s3:// or pvc://") : why));
    s.checkpoint_grace_seconds = 60;
    if (c->contains("gracePeriodSeconds")) {
      const json& g = (*c)["gracePeriodSeconds"];
      if (!g.is_number_integer() || g.get<int64_t>() < 0 || g.get<int64_t>() > 3600)
        r.error("spec.checkpoint.gracePeriodSeconds: must be an integer from 0 to 3600");
      else
        s.checkpoint_grace_seconds = g.get<int>();
    }
    s.checkpoint_secret = secret_ref(r, *c, "spec.checkpoint").value_or("");
  }
}

// Data in and outputs out (after the checkpoint: both default to its Secret, outputs to its store).
void parse_transfers(Reader& r, const json* spec, TaskSpec& s) {
  auto s3_uri = [&](const json& o, const std::string& path) {
    std::string uri = r.str(o, "uri", path + ".uri").value_or(""), why;
    auto location = storage::parse_location(uri, &why);
    if (!location || location->scheme != storage::Location::Scheme::S3)
      r.error(path + ".uri: " + (location ? std::string("must start with s3://") : why));
    return uri;
  };
  auto secret = [&](const json& o, const std::string& path) {
    return secret_ref(r, o, path).value_or(s.checkpoint_secret);
  };
  if (const json* d = r.object(*spec, "data", "spec.data")) {
    TaskSpec::Data data;
    data.uri = s3_uri(*d, "spec.data");
    data.secret = secret(*d, "spec.data");
    data.mount_path = r.str(*d, "mountPath", "spec.data.mountPath").value_or(kDefaultDataPath);
    if (data.mount_path.empty() || data.mount_path.front() != '/' || data.mount_path.find("..") != std::string::npos)
      r.error("spec.data.mountPath: must be an absolute path without \"..\"");
    s.data = std::move(data);
  }
  if (const json* o = r.object(*spec, "outputs", "spec.outputs")) {
    s.outputs = TaskSpec::Outputs{s3_uri(*o, "spec.outputs"), secret(*o, "spec.outputs")};
  } else if (s.checkpoint_uri.rfind("s3://", 0) == 0) {
    std::string base = s.checkpoint_uri;
    while (!base.empty() && base.back() == '/') base.pop_back();
    s.outputs = TaskSpec::Outputs{base + "/outputs", s.checkpoint_secret};
  }
}

// What it may take: estimated duration, deadline, budget, run policy.
void parse_limits(Reader& r, const json* spec, TaskSpec& s) {
  if (auto d = r.str(*spec, "estimatedDuration", "spec.estimatedDuration")) {
    s.estimated_duration = parse_duration(*d);
    if (!s.estimated_duration) r.error("spec.estimatedDuration: \"" + *d + "\" is not a duration like 6h or 90m (at most " +
                                       std::to_string(kMaxDuration.count() / 24) + "d)");
  }
  if (auto d = r.str(*spec, "deadline", "spec.deadline")) {
    if (auto t = kube::parse_time(*d)) s.deadline_at = *t;
    else if (auto after = parse_duration(*d)) s.deadline_after = *after;
    else r.error("spec.deadline: \"" + *d + "\" is neither a time like 2026-11-24T18:00:00Z nor a duration like 48h");
  }
  if (auto c = r.str(*spec, "maxCost", "spec.maxCost")) {
    s.max_cost_micros = parse_money(*c);
    if (!s.max_cost_micros) r.error("spec.maxCost: \"" + *c + "\" is not an amount like 250.00 (at most 6 decimals, below 100 billion)");
  }
  if (const json* rp = r.object(*spec, "runPolicy", "spec.runPolicy")) {
    s.run_policy.backoff_limit = static_cast<int>(r.integer(*rp, "backoffLimit", "spec.runPolicy.backoffLimit", 0, 100).value_or(3));
    s.run_policy.active_deadline_seconds =
        r.integer(*rp, "activeDeadlineSeconds", "spec.runPolicy.activeDeadlineSeconds", 1, int64_t{1} << 40);
    s.run_policy.ttl_seconds_after_finished =
        r.integer(*rp, "ttlSecondsAfterFinished", "spec.runPolicy.ttlSecondsAfterFinished", 0, int64_t{1} << 40);
    std::string policy = r.str(*rp, "cleanPodPolicy", "spec.runPolicy.cleanPodPolicy").value_or("Running");
    if (policy == "Running") s.run_policy.clean_pod_policy = CleanPodPolicy::Running;
    else if (policy == "All") s.run_policy.clean_pod_policy = CleanPodPolicy::All;
    else if (policy == "None") s.run_policy.clean_pod_policy = CleanPodPolicy::None;
    else r.error("spec.runPolicy.cleanPodPolicy: must be Running, All or None");
    s.run_policy.suspend = r.boolean(*rp, "suspend", "spec.runPolicy.suspend").value_or(false);
    s.run_policy.start_grace_seconds = r.integer(*rp, "startGraceSeconds", "spec.runPolicy.startGraceSeconds", 0, int64_t{1} << 31);
  }
}

}  // namespace

namespace {
// The bytes of what the user writes of a task: its spec, labels and annotations.
size_t written_size(const json& object) {
  size_t bytes = json_text(object["spec"]).size();
  const json& meta = kube::object_at(object, "metadata");
  for (const char* field : {"labels", "annotations"})
    if (meta.contains(field)) bytes += json_text(meta[field]).size();
  return bytes;
}
}  // namespace

ParsedTask parse_task(const json& object) {
  ParsedTask result;
  Reader r(result.errors);
  TaskSpec s;
  if (!object.is_object()) {
    result.errors.push_back("the object is not a JSON object");
    return result;
  }
  if (const json* meta = r.object(object, "metadata", "metadata")) {
    s.name = r.str(*meta, "name", "metadata.name").value_or("");
    s.ns = r.str(*meta, "namespace", "metadata.namespace").value_or("");
    s.uid = r.str(*meta, "uid", "metadata.uid").value_or("");
    s.generation = kube::int_at(*meta, "generation").value_or(0);
  }
  if (s.name.empty()) r.error("metadata.name: missing");
  if (s.name.size() > 50) r.error("metadata.name: must be at most 50 characters");
  const json* spec = r.object(object, "spec", "spec");
  if (spec == nullptr) {
    r.error("spec: missing");
    return result;
  }
  if (const size_t bytes = written_size(object); bytes > kMaxTaskBytes)
    r.error("spec: the task's spec, labels and annotations take " + std::to_string(bytes) + " bytes; at most " +
            std::to_string(kMaxTaskBytes) + " (its status must still fit beside them under the API server's object limit)");
  parse_shape(r, spec, s);
  parse_policies(r, spec, s, &result.errors);
  parse_transfers(r, spec, s);
  parse_limits(r, spec, s);
  if (result.errors.empty()) result.spec = std::move(s);
  return result;
}

int64_t gpu_milli_at_max(const json& object) {
  const json* spec = object.is_object() && object.contains("spec") && object["spec"].is_object() ? &object["spec"] : nullptr;
  if (!spec) return 0;
  int64_t max_workers = 1;
  if (auto r = spec->find("replicas"); r != spec->end() && r->is_object())
    if (auto m = r->find("max"); m != r->end() && m->is_number_integer()) max_workers = std::max<int64_t>(0, m->get<int64_t>());
  std::string gpus = "1";
  if (auto w = spec->find("worker"); w != spec->end() && w->is_object())
    if (auto g = w->find("gpus"); g != w->end() && g->is_string()) gpus = g->get<std::string>();
  const auto request = parse_gpus(gpus);
  return request ? max_workers * request->milli : 0;
}

const char* task_type_name(TaskType type) {
  switch (type) {
    case TaskType::MPI: return "MPI";
    case TaskType::Single: return "Single";
    case TaskType::PyTorch: return "PyTorch";
  }
  return "MPI";
}

std::optional<TaskType> parse_task_type(const std::string& name) {
  for (TaskType t : {TaskType::MPI, TaskType::Single, TaskType::PyTorch})
    if (name == task_type_name(t)) return t;
  return std::nullopt;
}

}  // namespace valley::api
