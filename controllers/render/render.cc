#include "controllers/render/render.h"

#include <string_view>

#include "controllers/render/transfers.h"

#include "controllers/api/dra.h"
#include "controllers/api/nodepool.h"
#include "controllers/api/pod.h"
#include "controllers/api/template_guard.h"
#include "controllers/gpu/resources.h"
#include "operator/kube/base64.h"
#include "operator/kube/json_fields.h"
#include "operator/storage/object_store.h"
#include "operator/json_text.h"

namespace valley::render {
namespace {

constexpr const char* kHostfilePath = "/etc/mpi/hostfile";
constexpr const char* kHostsMount = "/etc/mpi";
constexpr const char* kDiscoverHostsAnnotation = "valley.dev/discover-hosts";
// Horovod's elastic mode asks this script which hosts are up ("host:slots" per line). It reads them
// from the hostfile (plain sh: any launcher image runs it), so it never changes, and the launcher's
// annotations, which may hold 256 KiB in all, hold the list of hosts once.
const std::string& discover_hosts_script() {
  static const std::string script = std::string("#!/bin/sh\n"
                                                "while read -r host slots; do\n"
                                                "  [ -n \"$host\" ] && echo \"$host:${slots#slots=}\"\n"
                                                "done < \"${OMPI_MCA_orte_default_hostfile:-") +
                                    kHostfilePath + "}\"\nexit 0\n";
  return script;
}
constexpr const char* kSshMount = "/root/.ssh";  // Baseline: root's own keys, as MPI images expect
constexpr const char* kRestrictedSshMount = "/etc/valley/ssh";

bool restricted(const TaskSpec& spec) { return spec.pod_security.level == api::PodSecurityLevel::Restricted; }
int ssh_port(const TaskSpec& spec) { return restricted(spec) ? api::kRestrictedSshPort : 22; }
const char* ssh_dir(const TaskSpec& spec) { return restricted(spec) ? kRestrictedSshMount : kSshMount; }

// Sets `key` in `object` unless the user's template already did: the template may choose a
// stricter or different value (another uid, a Localhost seccomp profile).
void default_to(json& object, const char* key, const json& value) {
  if (!object.contains(key)) object[key] = value;
}

// Pod Security "restricted" for every container Valley runs and every one the template adds.
void restrict_pod(json& ps, int64_t uid) {
  json& pod_sc = ps["securityContext"];
  if (!pod_sc.is_object()) pod_sc = json::object();
  default_to(pod_sc, "runAsNonRoot", true);
  default_to(pod_sc, "runAsUser", uid);
  default_to(pod_sc, "runAsGroup", uid);
  default_to(pod_sc, "fsGroup", uid);  // the SSH keys' group: readable by the pod's user
  default_to(pod_sc, "seccompProfile", {{"type", "RuntimeDefault"}});
  for (const char* list : {"initContainers", "containers"}) {
    if (!ps.contains(list) || !ps[list].is_array()) continue;
    for (auto& c : ps[list]) {
      if (!c.is_object()) continue;
      json& sc = c["securityContext"];
      if (!sc.is_object()) sc = json::object();
      default_to(sc, "allowPrivilegeEscalation", false);
      default_to(sc, "capabilities", {{"drop", json::array({"ALL"})}});
    }
  }
}

// The NVIDIA runtime hands a container the GPUs its NVIDIA_VISIBLE_DEVICES names, and CUDA base
// images set it to "all": every container but the one holding the plan's GPUs (the first, when
// `first_holds_gpus`; the device plugin sets its variable) says "void", so an image's default cannot
// reach the node's GPUs outside the plan and the bill.
void hide_node_gpus(json& ps, bool first_holds_gpus) {
  for (const char* list : {"initContainers", "containers"}) {
    if (!ps.contains(list) || !ps[list].is_array()) continue;
    for (size_t i = 0; i < ps[list].size(); ++i) {
      json& c = ps[list][i];
      if (!c.is_object() || (first_holds_gpus && i == 0 && std::string_view(list) == "containers")) continue;
      if (!c.contains("env") || !c["env"].is_array()) c["env"] = json::array();
      c["env"].push_back({{"name", api::kNvidiaVisibleDevices}, {"value", "void"}});
    }
  }
}

json labels(const TaskSpec& spec, const std::string& role, int epoch) {
  json l = {{label::kManagedBy, "valley"}, {label::kTask, spec.name}};
  if (!role.empty()) l[label::kRole] = role;
  if (epoch > 0) l[label::kEpoch] = std::to_string(epoch);
  return l;
}

json owner_reference(const TaskSpec& spec) {
  return json::array({{{"apiVersion", "valley.dev/v1beta1"},
                       {"kind", "TrainingTask"},
                       {"name", spec.name},
                       {"uid", spec.uid},
                       {"controller", true},
                       {"blockOwnerDeletion", true}}});
}

json metadata(const TaskSpec& spec, const std::string& name, const std::string& role, int epoch) {
  return {{"name", name}, {"namespace", spec.ns}, {"labels", labels(spec, role, epoch)}, {"ownerReferences", owner_reference(spec)}};
}

json env(const std::string& name, const std::string& value) { return {{"name", name}, {"value", value}}; }

json contract_env(const TaskSpec& spec, const std::string& role, const Shape& shape) {
  return json::array({env("VALLEY_TASK", spec.name), env("VALLEY_ROLE", role),
                      env("VALLEY_WORLD_SIZE", std::to_string(shape.workers * spec.slots_per_worker)),
                      env("VALLEY_WORKERS", std::to_string(shape.workers)),
                      env("VALLEY_SLOTS_PER_WORKER", std::to_string(spec.slots_per_worker)),
                      env("VALLEY_EPOCH", std::to_string(shape.epoch)), env("VALLEY_CHECKPOINT_URI", spec.checkpoint_uri),
                      env("VALLEY_RESUME", shape.epoch > 1 ? "1" : "0")});
}

// The environment mpirun and the image's sshd read (OpenMPI's ssh settings).
void mpi_env(const TaskSpec& spec, json& envs) {
  // The hostfile's names resolve only as written (<worker>.<service>.<ns>.svc); OpenMPI 4 would
  // shorten them to their first label and then fail to resolve them.
  envs.push_back(env("OMPI_MCA_orte_keep_fqdn_hostnames", "true"));
  // OpenMPI 4.1's orted maps its hwloc topology into a "hole" it guesses in its address space and
  // sometimes segfaults there (hwloc_shmem_topology_write); the shared topology only saves memory
  // when many ranks share a node, so it is off. mpirun hands OMPI_MCA_* on to the orteds it starts.
  envs.push_back(env("OMPI_MCA_rtc_hwloc_vmhole", "none"));
  // Where sshd listens and finds authorized_keys (the image's sshd reads these), and how mpirun's ssh
  // reaches it: host keys are made per pod, so none is pinned.
  envs.push_back(env("VALLEY_SSH_PORT", std::to_string(ssh_port(spec))));
  envs.push_back(env("VALLEY_SSH_DIR", ssh_dir(spec)));
  envs.push_back(env("OMPI_MCA_plm_rsh_args", "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectionAttempts=10" +
                                                  (restricted(spec) ? " -p " + std::to_string(ssh_port(spec)) + " -i " +
                                                                          std::string(kRestrictedSshMount) + "/id_ecdsa"
                                                                    : std::string())));
}

// The task's SSH keys.
void mpi_volumes(const TaskSpec& spec, json& volumes) {
  volumes.push_back({{"name", "valley-ssh"},
                     {"secret",
                      {{"secretName", ssh_secret_name(spec.name)},
                       // Restricted: owned by root, readable by the pod's group (fsGroup); ssh
                       // checks a key's mode only when the key is its user's own file.
                       {"defaultMode", restricted(spec) ? 0440 : 0600},
                       {"items",
                        {{{"key", "ssh-privatekey"}, {"path", "id_ecdsa"}},
                         {{"key", "ssh-publickey"}, {"path", "id_ecdsa.pub"}},
                         {{"key", "ssh-publickey"}, {"path", "authorized_keys"}}}}}}});
}

// A PyTorch worker: the user's command under torchrun (unless it starts torchrun itself), told
// through the environment (PET_*: torchrun's defaults for its flags) the task's rendezvous, hosted
// by worker 0's agent at its name in the task's Service, a new one each epoch, and its nodes'
// bounds (replicas.min:max), so agents that join or leave within an epoch make the others restart
// their processes at the new size without a new epoch. A peer that leaves fails the others'
// processes, which torchrun counts as a restart: it may restart them often before Valley sees
// the pod fail (a flag of the command's own torchrun overrides these).
void torchrun_worker(const TaskSpec& spec, int index, const Shape& shape, json& container) {
  if (spec.worker.command.empty() || spec.worker.command.front() != "torchrun") {
    json command = json::array({"torchrun", "--no_python"});  // the command is a program, not a script
    for (const auto& word : spec.worker.command) command.push_back(word);
    container["command"] = command;
  }
  json& envs = container["env"];
  envs.push_back(env("PET_NNODES", std::to_string(spec.min_workers) + ":" + std::to_string(spec.max_workers)));
  envs.push_back(env("PET_NPROC_PER_NODE", std::to_string(spec.slots_per_worker)));
  envs.push_back(env("PET_RDZV_BACKEND", "c10d"));
  envs.push_back(env("PET_RDZV_ENDPOINT", rendezvous_endpoint(spec)));
  envs.push_back(env("PET_RDZV_ID", spec.name + "-" + std::to_string(shape.epoch)));
  // Worker 0 hosts the store whatever its name resolves to; the others wait for it as long as a
  // pod may take to start (an image pull), not torchrun's minute.
  envs.push_back(env("PET_RDZV_CONF", std::string(index == 0 ? "is_host=1" : "is_host=0") + ",read_timeout=600"));
  envs.push_back(env("PET_MAX_RESTARTS", "100"));
}

// The user's PodTemplateSpec is the base; Valley's own fields win where both say something.
json pod_from_template(const TaskSpec& spec, const api::ContainerSpec& c, const std::string& name,
                       const std::string& role, const Shape& shape) {
  json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}};
  json tmpl_meta = c.pod_template.value("metadata", json::object());
  json tmpl_spec = c.pod_template.value("spec", json::object());
  pod["metadata"] = metadata(spec, name, role, shape.epoch);
  for (const char* field : {"labels", "annotations"}) {
    if (!tmpl_meta.contains(field) || !tmpl_meta[field].is_object()) continue;
    // Keys under valley.dev/ are Valley's records (replicas, seats, roles): never the template's.
    for (const auto& [k, v] : tmpl_meta[field].items())
      if (!pod["metadata"][field].contains(k) && k.rfind(api::kValleyKeyPrefix, 0) != 0) pod["metadata"][field][k] = v;
  }
  // Valley moves a gang itself when that pays (the planner's rule 4); an autoscaler consolidating
  // the node of one of its pods would restart the whole gang. Spot interruptions still come, as
  // notices. (A template's own annotation says otherwise.)
  if (!pod["metadata"]["annotations"].contains(api::karpenter::kDoNotDisrupt)) pod["metadata"]["annotations"][api::karpenter::kDoNotDisrupt] = "true";
  pod["spec"] = tmpl_spec.is_object() ? tmpl_spec : json::object();
  json& ps = pod["spec"];
  ps["restartPolicy"] = "Never";  // Valley restarts whole epochs; a pod never restarts in place
  ps["hostname"] = name;
  // MPI wiring (the SSH keys, OpenMPI's settings) only for MPI tasks, the headless Service's name
  // for tasks with one: a Single task has no Service or Secret, and a PyTorch task no Secret, and a
  // pod mounting what does not exist would never start on a real kubelet.
  const bool launcher = spec.has_launcher();
  if (spec.has_worker_service()) ps["subdomain"] = service_name(spec.name);

  json container = json::object();
  if (ps.contains("containers") && ps["containers"].is_array() && !ps["containers"].empty()) container = ps["containers"][0];
  container["name"] = role;
  container["image"] = c.image;
  if (!c.command.empty()) container["command"] = c.command;
  if (!c.args.empty()) container["args"] = c.args;
  json envs = container.value("env", json::array());
  for (auto& e : contract_env(spec, role, shape)) envs.push_back(e);
  std::string why;
  auto location = storage::parse_location(spec.checkpoint_uri, &why);
  if (location && location->scheme == storage::Location::Scheme::Pvc)
    envs.push_back(env("VALLEY_CHECKPOINT_DIR", storage::pvc_directory(*location)));
  if (!spec.checkpoint_secret.empty()) {
    // The store's credentials and endpoint, as the AWS SDKs and valley-train read them.
    json from = container.value("envFrom", json::array());
    from.push_back({{"secretRef", {{"name", spec.checkpoint_secret}}}});
    container["envFrom"] = from;
  }
  if (!spec.checkpoint_uri.empty()) {
    ps["terminationGracePeriodSeconds"] = spec.checkpoint_grace_seconds;
    // The workload may leave its checkpoint record here; Valley reads it when the pod ends.
    container["terminationMessagePolicy"] = "File";
  }
  if (launcher) mpi_env(spec, envs);
  container["env"] = envs;
  add_transfers(spec, role, ps, container);
  json resources = container.value("resources", json::object());
  for (const auto& [k, v] : c.resources.items()) resources[k] = v;
  container["resources"] = resources;
  json mounts = container.value("volumeMounts", json::array());
  if (launcher) {
    mounts.push_back({{"name", "valley-ssh"}, {"mountPath", ssh_dir(spec)}, {"readOnly", true}});
  }
  if (location && location->scheme == storage::Location::Scheme::Pvc)
    mounts.push_back({{"name", "valley-checkpoint"}, {"mountPath", storage::pvc_mount_path(*location)}});
  container["volumeMounts"] = mounts;
  if (ps.contains("containers") && ps["containers"].is_array() && !ps["containers"].empty()) {
    ps["containers"][0] = container;
  } else {
    ps["containers"] = json::array({container});
  }

  json volumes = ps.value("volumes", json::array());
  if (launcher) mpi_volumes(spec, volumes);
  if (location && location->scheme == storage::Location::Scheme::Pvc)
    volumes.push_back({{"name", "valley-checkpoint"}, {"persistentVolumeClaim", {{"claimName", location->bucket}}}});
  ps["volumes"] = volumes;
  if (restricted(spec)) restrict_pod(ps, spec.pod_security.run_as_user);
  return pod;
}

}  // namespace

std::string launcher_name(const std::string& task) { return task + "-launcher"; }
std::string worker_host(const TaskSpec& spec, int index) {
  return worker_name(spec.name, index) + "." + service_name(spec.name) + "." + spec.ns + ".svc";
}
std::string rendezvous_endpoint(const TaskSpec& spec) { return worker_host(spec, 0) + ":" + std::to_string(api::kRendezvousPort); }
std::string worker_name(const std::string& task, int index) { return task + "-worker-" + std::to_string(index); }
json task_object_metadata(const TaskSpec& spec, const std::string& name) { return metadata(spec, name, "", 0); }

std::string service_name(const std::string& task) { return task + "-workers"; }
std::string ssh_secret_name(const std::string& task) { return task + "-ssh"; }
std::string task_selector(const std::string& task) { return std::string(label::kTask) + "=" + task; }

WorkerPlacement default_placement(const TaskSpec& spec) {
  WorkerPlacement p;
  if (spec.gpus.whole()) {
    p.gpu_resource = "nvidia.com/gpu";
    p.gpu_count = spec.gpus.count();
    return p;
  }
  p.gpu_resource = gpu::smallest_partial_mig(spec.gpus.milli).value_or("nvidia.com/gpu");
  p.gpu_count = 1;
  return p;
}

namespace {
// GPU nodes that taint themselves with their GPU resource (managed GPU node groups, Karpenter GPU
// NodePools) keep off pods that ask for no GPU; a worker asking for that resource tolerates it, as
// the ExtendedResourceToleration admission plugin would add where it is enabled.
void tolerate_gpu_taint(json& pod_spec, const WorkerPlacement& placement) {
  if (placement.gpu_count <= 0 || !gpu::dra_class_of(placement.gpu_resource).empty() || !gpu::dra_seat_class_of(placement.gpu_resource).empty())
    return;
  const auto replicas = gpu::replicas_of(placement.gpu_resource);
  const std::string resource = replicas ? replicas->resource : placement.gpu_resource;
  json& tolerations = pod_spec["tolerations"];
  if (!tolerations.is_array()) tolerations = json::array();
  tolerations.push_back({{"key", resource}, {"operator", "Exists"}, {"effect", "NoSchedule"}});
}
}  // namespace

json worker_pod(const TaskSpec& spec, int index, const Shape& shape, const WorkerPlacement& placement) {
  api::ContainerSpec c = spec.worker;
  c.image = spec.worker.image_for(placement.vendor);
  std::string name = spec.type == api::TaskType::Single ? worker_name(spec.name, 0) : worker_name(spec.name, index);
  json pod = pod_from_template(spec, c, name, "worker", shape);
  pod["metadata"]["labels"][label::kWorkerIndex] = std::to_string(index);
  json& container = pod["spec"]["containers"][0];
  container["env"].push_back(env("VALLEY_WORKER_INDEX", std::to_string(index)));
  if (spec.type == api::TaskType::PyTorch) torchrun_worker(spec, index, shape, container);
  if (placement.gpu_count > 0) {
    pod["metadata"]["finalizers"] = json::array({kAccountingFinalizer});
    if (!placement.priced_as.vendor.empty()) pod["metadata"]["annotations"][api::kPricedAsAnnotation] = api::price_class_annotation(placement.priced_as);
    if (const std::string seat_class = gpu::dra_seat_class_of(placement.gpu_resource); !seat_class.empty()) {
      pod["metadata"]["annotations"][api::kGpuSeatAnnotation] = seat_class + "=" + std::to_string(placement.gpu_count);
      pod["spec"]["resourceClaims"] = json::array({{{"name", kGpuClaim}, {"resourceClaimName", placement.claim}}});
      container["resources"]["claims"] = json::array({{{"name", kGpuClaim}}});
    } else if (const std::string device_class = gpu::dra_class_of(placement.gpu_resource); !device_class.empty()) {
      pod["metadata"]["annotations"][api::kClaimedGpusAnnotation] = device_class + "=" + std::to_string(placement.gpu_count);
      pod["spec"]["resourceClaims"] =
          json::array({{{"name", kGpuClaim}, {"resourceClaimTemplateName", gpu_claim_template_name(spec, device_class, placement.gpu_count)}}});
      container["resources"]["claims"] = json::array({{{"name", kGpuClaim}}});
    } else if (const auto replicas = gpu::replicas_of(placement.gpu_resource)) {
      const char* annotation = replicas->sharing == gpu::Sharing::Mps ? api::kMpsReplicasAnnotation : api::kTimeSlicedReplicasAnnotation;
      pod["metadata"]["annotations"][annotation] = std::to_string(replicas->replicas);
      container["resources"]["limits"][replicas->resource] = std::to_string(placement.gpu_count);
      container["resources"]["requests"][replicas->resource] = std::to_string(placement.gpu_count);
    } else {
      container["resources"]["limits"][placement.gpu_resource] = std::to_string(placement.gpu_count);
      container["resources"]["requests"][placement.gpu_resource] = std::to_string(placement.gpu_count);
    }
  }
  use_data_cache(spec, placement.node, pod["spec"]);
  if (const auto bought = api::provision_target(placement.node)) {
    // A node still to be bought: the pod selects what its NodePool is to buy (the autoscaler
    // provisions for pending pods by what they select), not a name.
    namespace kp = api::karpenter;
    json expressions = json::array();
    for (const auto& [key, value] : std::initializer_list<std::pair<const char*, const std::string*>>{
             {kp::kNodePool, &bought->pool}, {kp::kCapacityType, &bought->capacity_type}, {kp::kInstanceType, &bought->instance_type}})
      expressions.push_back({{"key", key}, {"operator", "In"}, {"values", {*value}}});
    pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
        {"nodeSelectorTerms", json::array({{{"matchExpressions", expressions}}})}};
  } else if (!placement.node.empty()) {
    // kube-scheduler still binds the pod (checking CPU, memory, taints), but only to the planned node.
    pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
        {"nodeSelectorTerms",
         json::array({{{"matchFields", json::array({{{"key", "metadata.name"}, {"operator", "In"}, {"values", {placement.node}}}})}}})}};
  }
  tolerate_gpu_taint(pod["spec"], placement);
  hide_node_gpus(pod["spec"], placement.gpu_count > 0);
  api::seal_records(pod);
  return pod;
}

namespace {
const std::map<std::string, std::string>& match_attributes(const TaskSpec& spec) {
  static const std::map<std::string, std::string> none;
  return spec.devices ? spec.devices->match_attributes : none;
}

// A CEL string literal.
std::string cel_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// The device's attribute `name` ("domain/name", or the driver's own) equals `value` as text.
std::string cel_attribute_equals(const std::string& name, const std::string& value) {
  const size_t slash = name.rfind('/');
  const std::string domain = slash == std::string::npos ? "device.driver" : cel_string(name.substr(0, slash));
  const std::string field = "device.attributes[" + domain + "]." + name.substr(slash == std::string::npos ? 0 : slash + 1);
  return "has(" + field + ") && string(" + field + ") == " + cel_string(value);
}
}  // namespace

std::string gpu_claim_template_name(const TaskSpec& spec, const std::string& device_class, int count) {
  std::string name = spec.name + "-gpus-" + std::to_string(count);
  if (const auto& attributes = match_attributes(spec); !attributes.empty()) {
    uint32_t h = 2166136261u;  // FNV-1a of the attributes asked for
    for (const auto& [k, v] : attributes)
      for (char c : k + "=" + v + ";") h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", h);
    name += std::string("-") + hex;
  }
  return name + "." + device_class;
}

namespace {
// The claim's one request: `count` devices of `device_class` with the task's attributes.
json devices_request(const TaskSpec& spec, const std::string& device_class, int count) {
  json request = {{"name", kGpuClaim},
                  {"exactly", {{"deviceClassName", device_class}, {"allocationMode", "ExactCount"}, {"count", count}}}};
  for (const auto& [name, value] : match_attributes(spec))
    request["exactly"]["selectors"].push_back({{"cel", {{"expression", cel_attribute_equals(name, value)}}}});
  return request;
}
}  // namespace

json gpu_seats_claim(const TaskSpec& spec, const std::string& device_class, const std::string& node, const std::string& name) {
  json meta = metadata(spec, name, api::kSeatsClaimRole, 0);
  meta["annotations"][api::kSeatsNodeAnnotation] = node;  // a node's name may be too long for a label
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata", meta},
          {"spec", {{"devices", {{"requests", json::array({devices_request(spec, device_class, 1)})}}}}}};
}

json gpu_claim_template(const TaskSpec& spec, const std::string& device_class, int count) {
  const json request = devices_request(spec, device_class, count);
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaimTemplate"},
          {"metadata", metadata(spec, gpu_claim_template_name(spec, device_class, count), "", 0)},
          {"spec", {{"metadata", {{"labels", labels(spec, "worker", 0)}}}, {"spec", {{"devices", {{"requests", json::array({request})}}}}}}}};
}

// The launcher goes out with its workers; this init container holds mpirun back until every worker
// in the hostfile answers over ssh exactly as mpirun will reach it (the same hostfile, keys, port and
// options, from the launcher's environment). It gives up after VALLEY_WORKERS_WAIT_SECONDS (a worker
// image without sshd, a pull that never ends) with its reason as the last log line, which the
// kubelet makes its termination message.
// The shell is the container's PID 1, which ignores SIGTERM without a handler: the trap (and
// waiting on ssh and sleep in the background, which a trapped signal interrupts) lets a launcher
// deleted while it waits go at once rather than after its checkpoint grace period.
std::string wait_for_workers_script() {
  return "trap 'exit 143' TERM INT\n"
         "limit=${VALLEY_WORKERS_WAIT_SECONDS:-" + std::to_string(kWorkersWaitSeconds) +
         "}\n"
         "deadline=$(( $(date +%s) + limit ))\n"
         "while read -r host rest; do\n"
         "  [ -n \"$host\" ] || continue\n"
         "  echo \"valley: waiting for $host\"\n"
         "  until ssh $OMPI_MCA_plm_rsh_args -o BatchMode=yes -o ConnectTimeout=5 \"$host\" true </dev/null >/dev/null 2>&1 & wait $!; do\n"
         "    if [ \"$(date +%s)\" -ge \"$deadline\" ]; then\n"
         "      echo \"valley: worker $host did not answer over ssh within ${limit}s\" >&2\n"
         "      exit 1\n"
         "    fi\n"
         "    sleep 1 & wait $!\n"
         "  done\n"
         "done < \"$OMPI_MCA_orte_default_hostfile\"\n"
         "echo \"valley: all workers answer\"\n";
}

namespace {
// Adds `key <op> [value]` for each pair to every required node selector term of the pod (one term
// when it has none): NotIn, no term then matches a node carrying any of those labels; In, every term
// asks for all of them.
void require_expressions(json& pod, const json& expressions) {
  if (expressions.empty()) return;
  json& required = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
  if (!required.is_object()) required = json::object();
  json& terms = required["nodeSelectorTerms"];
  if (!terms.is_array() || terms.empty()) terms = json::array({json::object()});
  for (json& term : terms) {
    if (!term.is_object()) term = json::object();
    json& own = term["matchExpressions"];
    if (!own.is_array()) own = json::array();
    for (const auto& e : expressions) own.push_back(e);
  }
}

void require_nodes(json& pod, const std::vector<kube::LabelRequirement>& requirements) {
  json expressions = json::array();
  for (const auto& r : requirements) {
    json e = {{"key", r.key}, {"operator", r.op}};
    if (!r.values.empty()) e["values"] = r.values;
    expressions.push_back(std::move(e));
  }
  require_expressions(pod, expressions);
}

// The same for `key <op> [value]` pairs.
void require_labels(json& pod, const std::vector<std::pair<std::string, std::string>>& labels, const char* op) {
  std::vector<kube::LabelRequirement> requirements;
  for (const auto& [key, value] : labels) requirements.push_back({key, op, {value}});
  require_nodes(pod, requirements);
}

// Prefers the node of the task's worker 0 (kept beside the template's own preferences).
void prefer_worker_zero(json& pod, const TaskSpec& spec) {
  json& preferred = pod["spec"]["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"];
  if (!preferred.is_array()) preferred = json::array();
  preferred.push_back({{"weight", 100},
                       {"podAffinityTerm",
                        {{"topologyKey", "kubernetes.io/hostname"},
                         {"labelSelector",
                          {{"matchLabels", {{label::kTask, spec.name}, {label::kRole, "worker"}, {label::kWorkerIndex, "0"}}}}}}}});
}
}  // namespace

json launcher_pod(const TaskSpec& spec, const Shape& shape, const LauncherPlacement& placement) {
  json pod = pod_from_template(spec, spec.launcher, launcher_name(spec.name), "launcher", shape);
  require_labels(pod, placement.stay_off, "NotIn");
  require_labels(pod, placement.pool, "In");
  require_nodes(pod, placement.nodes);
  if (placement.pool.empty()) prefer_worker_zero(pod, spec);
  json& ps = pod["spec"];
  // The hosts: mpirun and the wait below read the hostfile, horovodrun the discovery script. Only
  // the launcher reads them, from its own annotations.
  pod["metadata"]["annotations"][api::kHostfileAnnotation] = hostfile(spec, shape.workers);
  pod["metadata"]["annotations"][kDiscoverHostsAnnotation] = discover_hosts_script();
  auto annotation = [](const char* key) { return json{{"fieldRef", {{"fieldPath", std::string("metadata.annotations['") + key + "']"}}}}; };
  json hostfile_item = annotation(api::kHostfileAnnotation), discover_item = annotation(kDiscoverHostsAnnotation);
  hostfile_item["path"] = "hostfile";
  discover_item["path"] = "discover_hosts.sh";
  discover_item["mode"] = 0755;
  ps["volumes"].push_back({{"name", "valley-hosts"}, {"downwardAPI", {{"defaultMode", 0644}, {"items", {hostfile_item, discover_item}}}}});
  json& main = ps["containers"][0];
  main["volumeMounts"].push_back({{"name", "valley-hosts"}, {"mountPath", kHostsMount}, {"readOnly", true}});
  main["env"].push_back(env("OMPI_MCA_orte_default_hostfile", kHostfilePath));
  // The launcher's own container, minus what only the long-running process needs.
  json wait = ps["containers"][0];
  wait["name"] = kWaitForWorkers;
  wait["command"] = json::array({"sh", "-c", wait_for_workers_script()});
  for (const char* field : {"args", "ports", "livenessProbe", "readinessProbe", "startupProbe", "lifecycle"}) wait.erase(field);
  wait["terminationMessagePolicy"] = "FallbackToLogsOnError";
  json inits = ps.value("initContainers", json::array());
  if (!inits.is_array()) inits = json::array();
  inits.push_back(wait);  // after the user's own init containers
  ps["initContainers"] = inits;
  hide_node_gpus(ps, false);
  api::seal_records(pod);
  return pod;
}

json headless_service(const TaskSpec& spec) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", metadata(spec, service_name(spec.name), "", 0)},
          {"spec",
           {{"clusterIP", "None"},
            // Workers must resolve each other before they are Ready: sshd comes up before training.
            {"publishNotReadyAddresses", true},
            {"selector", labels(spec, "", 0)},
            {"ports", spec.has_launcher() ? json::array({{{"name", "ssh"}, {"port", ssh_port(spec)}, {"targetPort", ssh_port(spec)}}})
                                          : json::array({{{"name", "rendezvous"}, {"port", api::kRendezvousPort}, {"targetPort", api::kRendezvousPort}}})}}}};
}

namespace {
std::string hostfile_line(const TaskSpec& spec, int index) { return worker_host(spec, index) + " slots=" + std::to_string(spec.slots_per_worker) + "\n"; }
}  // namespace

std::string hostfile(const TaskSpec& spec, int workers) {
  std::string out;
  for (int i = 0; i < workers; ++i) out += hostfile_line(spec, i);
  return out;
}

namespace {
// The bytes of the launcher's annotations but its hostfile's value, as launcher_pod writes them
// (the template's own, then Valley's two), without rendering the pod: asked at every reconcile.
size_t launcher_annotation_bytes_but_hosts(const TaskSpec& spec) {
  size_t bytes = std::string(api::kHostfileAnnotation).size() + std::string(kDiscoverHostsAnnotation).size() +
                 discover_hosts_script().size();
  const json& annotations = kube::object_at(kube::object_at(spec.launcher.pod_template, "metadata"), "annotations");
  if (!annotations.contains(api::karpenter::kDoNotDisrupt)) bytes += std::string(api::karpenter::kDoNotDisrupt).size() + 4;  // "true"
  for (const auto& [k, v] : annotations.items())
    if (k != api::kHostfileAnnotation && k != kDiscoverHostsAnnotation) bytes += k.size() + (v.is_string() ? v.get<std::string>().size() : json_text(v).size());
  return bytes;
}
}  // namespace

size_t launcher_annotation_bytes(const TaskSpec& spec, int workers) {
  return launcher_annotation_bytes_but_hosts(spec) + hostfile(spec, workers).size();
}

std::optional<std::string> launcher_too_large(const TaskSpec& spec) {
  if (spec.type != api::TaskType::MPI) return std::nullopt;
  const int workers = std::max(spec.max_workers, 1);
  const size_t others = launcher_annotation_bytes_but_hosts(spec);
  // The last line is the longest: so many of it bound the hostfile without writing it out.
  if (others + hostfile_line(spec, workers - 1).size() * static_cast<size_t>(workers) <= kMaxAnnotationBytes) return std::nullopt;
  const size_t bytes = others + hostfile(spec, workers).size();
  if (bytes <= kMaxAnnotationBytes) return std::nullopt;
  return "spec.replicas.max: the launcher's hostfile for " + std::to_string(workers) + " workers would make its annotations " +
         std::to_string(bytes) + " bytes; the API server takes at most " + std::to_string(kMaxAnnotationBytes) +
         " (fewer workers, or a shorter task or namespace name)";
}

json ssh_secret(const TaskSpec& spec, const SshKeyPair& keys) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"type", "kubernetes.io/ssh-auth"},
          {"metadata", metadata(spec, ssh_secret_name(spec.name), "", 0)},
          {"data", {{"ssh-privatekey", kube::base64_encode(keys.private_pem)}, {"ssh-publickey", kube::base64_encode(keys.public_openssh)}}}};
}

}  // namespace valley::render
