#include "controllers/task/cluster_cache.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "controllers/render/render.h"
#include "controllers/inputs/task_inputs.h"
#include "controllers/task/cache_fields.h"
#include "operator/kube/json_fields.h"
#include "operator/kube/this_thread.h"
#include "operator/json_text.h"

namespace valley::task {

namespace res = kube::resources;

namespace {
// The pod cache's index of Valley's pods by the task their label names (namespace/task).
constexpr const char* kByTask = "task";
}  // namespace

ClusterCache::ClusterCache(kube::Api& client, const ControllerOptions& options)
    : client_(client),
      options_(options),
      gpu_(options_.prometheus_url, options_.gpu_health, options_.gpu_health_interval, [this] {
        if (gpu_change_) gpu_change_();
      }) {
  kube::InformerOptions task_informer;
  task_informer.event_delay = options_.task_watch_delay;
  task_informer.ns = options_.watch_namespace;
  tasks_ = std::make_unique<kube::Informer>(client_, res::kTrainingTasks, task_informer);
  kube::InformerOptions owned;
  owned.label_selector = std::string(render::label::kManagedBy) + "=valley";
  // All pods, not only Valley's: the planner must know what everything else holds on each node.
  // Pods and nodes are cached lean: only the fields Valley reads (cache_fields.h).
  kube::InformerOptions lean_pods, lean_nodes;
  lean_pods.fields = pod_fields();
  lean_pods.transform = nullptr;  // the mask drops managedFields too
  lean_nodes.fields = node_fields();
  lean_nodes.transform = nullptr;
  lean_nodes.label_selector = options_.node_selector;
  pods_ = std::make_unique<kube::BasicInformer<api::Pod>>(client_, res::kPods, lean_pods);
  pods_->store().add_index(kByTask, [](const api::Pod& p) {
    const std::string& task = p.label(render::label::kTask);
    return task.empty() ? std::vector<std::string>{} : std::vector<std::string>{p.ns + "/" + task};
  });
  nodes_ = std::make_unique<kube::Informer>(client_, res::kNodes, lean_nodes);
  kube::InformerOptions owned_here = owned;
  owned_here.ns = options_.watch_namespace;
  services_ = std::make_unique<kube::Informer>(client_, res::kServices, owned_here);
  // Of ConfigMaps, only the namespace ownership Valley publishes (a task has none: its launcher
  // carries its hostfile).
  kube::InformerOptions ownership = owned;
  if (!options_.ownership_name.empty()) {
    ownership.ns = options_.ownership_namespace;
    ownership.field_selector = "metadata.name=" + options_.ownership_name;
  }
  configs_ = std::make_unique<kube::Informer>(client_, res::kConfigMaps, ownership);
  pricing_ = std::make_unique<kube::Informer>(client_, res::kPricingPolicies);
  tenants_ = std::make_unique<kube::Informer>(client_, res::kTenants);
  namespaces_ = std::make_unique<kube::Informer>(client_, res::kNamespaces);
  slices_ = std::make_unique<kube::Informer>(client_, res::kResourceSlices);
  kube::InformerOptions lean_claims;
  lean_claims.fields = claim_fields();
  lean_claims.transform = nullptr;
  claims_ = std::make_unique<kube::BasicInformer<api::DraClaim>>(client_, res::kResourceClaims, lean_claims);
  if (!options_.instance_types.types.empty()) node_pools_ = std::make_unique<kube::Informer>(client_, res::kNodePools);
  // The planning snapshot follows the caches event by event (registered first, so that whatever
  // these events wake finds it up to date).
  auto snapshot_handlers = [this]<class T>(void (planner::ClusterSnapshot::*upsert)(const std::shared_ptr<const T>&),
                                           void (planner::ClusterSnapshot::*remove)(const std::string&)) {
    using Ptr = std::shared_ptr<const T>;
    auto changed = [this, upsert](const Ptr& o) {
      std::lock_guard lock(snapshot_mu_);
      (snapshot_.*upsert)(o);
    };
    return kube::BasicInformerHandlers<T>{changed, [changed](const Ptr&, const Ptr& o) { changed(o); },
                                          [this, remove](const Ptr& o) {
                                            std::lock_guard lock(snapshot_mu_);
                                            (snapshot_.*remove)(kube::ObjectTraits<T>::key(*o));
                                          }};
  };
  // Before the snapshot forgets a deleted node: pods that ran on it are priced by it.
  nodes_->add_handlers(kube::InformerHandlers{[this](const kube::ObjectPtr& o) {
                                                std::lock_guard lock(snapshot_mu_);
                                                departed_nodes_.erase(kube::ObjectTraits<nlohmann::json>::key(*o));
                                              },
                                              nullptr,
                                              [this](const kube::ObjectPtr& o) {
                                                std::lock_guard lock(snapshot_mu_);
                                                remember_departed(kube::ObjectTraits<nlohmann::json>::key(*o));
                                              }});
  tasks_->add_handlers(snapshot_handlers(&planner::ClusterSnapshot::upsert_task, &planner::ClusterSnapshot::remove_task));
  pods_->add_handlers(snapshot_handlers(&planner::ClusterSnapshot::upsert_pod, &planner::ClusterSnapshot::remove_pod));
  nodes_->add_handlers(snapshot_handlers(&planner::ClusterSnapshot::upsert_node, &planner::ClusterSnapshot::remove_node));
  slices_->add_handlers(snapshot_handlers(&planner::ClusterSnapshot::upsert_slice, &planner::ClusterSnapshot::remove_slice));
  claims_->add_handlers(snapshot_handlers(&planner::ClusterSnapshot::upsert_claim, &planner::ClusterSnapshot::remove_claim));
}

ClusterCache::~ClusterCache() { stop(); }

void ClusterCache::start(const std::atomic<bool>& stop) {
  kube::InformerBase* required[] = {tasks_.get(), pods_.get(), nodes_.get(), services_.get(), configs_.get(), pricing_.get()};
  for (auto* inf : required) inf->start();
  for (auto* inf : required) {
    for (int waited = 1; !stop.load() && !inf->wait_for_sync(std::chrono::seconds(1)); ++waited)
      if (waited == 10) {
        const kube::Resource& r = inf->resource();
        spdlog::error("{} ({}) not listed after 10 s: is it served and may Valley list it? Valley's own kinds need "
                      "this release's CRDs (kubectl apply --server-side -k crds/) before its operator",
                      r.plural, r.api_version());
      }
  }
  // Tenants are optional (their CRD may not be installed, or namespaces not readable): without them
  // in a few seconds, tasks are planned without tenants until they come.
  for (auto* inf : {tenants_.get(), namespaces_.get()}) inf->start();
  for (auto* inf : {tenants_.get(), namespaces_.get()})
    if (!stop.load() && !inf->wait_for_sync(std::chrono::seconds(5)))
      spdlog::warn("tenants: {} not listed yet (is the Tenant CRD installed, may Valley list namespaces?): planning without tenants meanwhile",
                   inf == tenants_.get() ? "tenants" : "namespaces");
  // DRA likewise: a cluster before Kubernetes 1.34 (or one that turned it off) has no resource.k8s.io/v1.
  kube::InformerBase* dra[] = {slices_.get(), claims_.get()};
  for (auto* inf : dra) inf->start();
  for (auto* inf : dra)
    if (!stop.load() && !inf->wait_for_sync(std::chrono::seconds(5)))
      spdlog::warn("dra: {} not listed yet (resource.k8s.io/v1 served? may Valley list them?): GPUs published through DRA are not placed on meanwhile",
                   inf->resource().plural);
  if (node_pools_) {
    node_pools_->start();
    if (!stop.load() && !node_pools_->wait_for_sync(std::chrono::seconds(5)))
      spdlog::warn("provisioning: NodePools (karpenter.sh/v1) not listed yet (is Karpenter installed, may Valley list them?): "
                   "planning on existing nodes only meanwhile");
  }
  gpu_stop_ = false;
  gpu_thread_ = std::make_unique<std::thread>([this] {
    kube::name_this_thread("gpu-metrics");
    gpu_.run(gpu_stop_);
  });
}

void ClusterCache::stop() {
  gpu_stop_ = true;
  if (gpu_thread_) {
    gpu_thread_->join();
    gpu_thread_.reset();
  }
  kube::InformerBase* all[] = {tasks_.get(), pods_.get(), nodes_.get(), services_.get(), configs_.get(), pricing_.get(), tenants_.get(),
                               namespaces_.get(), slices_.get(), claims_.get(), node_pools_.get()};
  for (auto* inf : all)
    if (inf) inf->stop();
}

kube::ObjectPtr ClusterCache::task(const std::string& key) const { return tasks_->store().get(key); }

std::vector<kube::ObjectPtr> ClusterCache::task_list() const { return tasks_->store().list(); }

cost::DurationSpread ClusterCache::duration_spread(const std::string& ns) const {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(spread_mu_);
  auto found = spreads_.find(ns);
  if (found != spreads_.end() && now - found->second.at < std::chrono::minutes(1)) return found->second.spread;
  std::vector<double> ratios;
  for (const auto& task : tasks_->store().by_index(kube::index::kNamespace, ns))
    if (auto r = inputs::duration_ratio_of(*task)) ratios.push_back(*r);
  LearnedSpread& learned = spreads_[ns];
  learned = {now, cost::duration_spread(std::move(ratios))};
  return learned.spread;
}

std::vector<planner::PodPtr> ClusterCache::pods_owned_by(const std::string& ns, const std::string& uid) const {
  auto pods = pods_->store().by_index(kube::index::kOwnerUid, uid);
  // An owner reference names a uid only: a pod of another namespace that names this task is not its.
  std::erase_if(pods, [&](const planner::PodPtr& p) { return p->ns != ns; });
  return pods;
}

std::vector<planner::PodPtr> ClusterCache::pods_of_task(const std::string& ns, const std::string& task) const {
  return pods_->store().by_index(kByTask, ns + "/" + task);
}

std::string ClusterCache::cached_uid(const kube::Resource& r, const std::string& ns, const std::string& name) const {
  const std::string key = ns + "/" + name;
  if (&r == &res::kPods) {
    auto cached = pods_->store().get(key);
    return cached ? cached->uid : "";
  }
  auto cached = services_->store().get(key);
  return cached ? kube::string_at(kube::object_at(*cached, "metadata"), "uid") : "";
}

std::shared_ptr<const planner::Node> ClusterCache::node(const std::string& name) {
  std::shared_ptr<const planner::Node> n;
  {
    std::lock_guard lock(snapshot_mu_);
    bring_facts_up_to_date();
    n = snapshot_.node(name);
  }
  if (!n) return n;
  // Copied only for a failing GPU (rare): every reconcile looks up the nodes of its pods.
  if (std::string fault = gpu_fault_of(*n); !fault.empty()) n = std::make_shared<const planner::Node>(planner::with_gpu_fault(*n, fault));
  return n;
}

void ClusterCache::remember_departed(const std::string& name) {
  constexpr auto kKept = std::chrono::hours(24);
  constexpr size_t kMostKept = 10'000;
  auto n = snapshot_.node(name);
  if (!n) return;
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(departed_nodes_, [&](const auto& entry) { return now - entry.second.gone > kKept; });
  if (departed_nodes_.size() >= kMostKept)
    departed_nodes_.erase(std::min_element(departed_nodes_.begin(), departed_nodes_.end(),
                                           [](const auto& a, const auto& b) { return a.second.gone < b.second.gone; }));
  departed_nodes_[name] = {now, std::move(n)};
}

std::shared_ptr<const planner::Node> ClusterCache::node_as_last_seen(const std::string& name) {
  if (auto n = node(name)) return n;
  std::lock_guard lock(snapshot_mu_);
  auto it = departed_nodes_.find(name);
  if (it == departed_nodes_.end()) return nullptr;
  return it->second.node;
}

std::vector<api::NodePool> ClusterCache::node_pool_list() const {
  std::vector<api::NodePool> out;
  if (!node_pools_) return out;
  for (const auto& o : node_pools_->store().list()) {
    auto read = api::read_node_pool(*o);
    if (read.pool) out.push_back(std::move(*read.pool));
    else spdlog::warn("provisioning: NodePool {}: {}; Valley buys nothing from it", kube::string_at(kube::object_at(*o, "metadata"), "name"), read.error);
  }
  return out;
}

std::vector<planner::Node> ClusterCache::nodes() {
  std::vector<planner::Node> all;
  {
    std::lock_guard lock(snapshot_mu_);
    bring_facts_up_to_date();
    all = snapshot_.nodes();
  }
  for (auto& n : all) n = planner::with_gpu_fault(std::move(n), gpu_fault_of(n));
  return all;
}

void ClusterCache::bring_facts_up_to_date() {
  // The facts change only with the policy in force: they are built (a dozen strings) and compared
  // once per policy, not for every node a reconcile looks at.
  auto p = policy();
  if (facts_known_ && p == facts_policy_) return;
  facts_policy_ = std::move(p);
  facts_known_ = true;
  snapshot_.set_facts(node_facts());
}

planner::SnapshotView ClusterCache::snapshot_view() {
  std::lock_guard lock(snapshot_mu_);
  bring_facts_up_to_date();
  return snapshot_.view();
}

std::string ClusterCache::gpu_fault_of(const planner::Node& n) const {
  return n.fault.empty() && gpu_.enabled() ? gpu_.fault_of(n.name) : std::string();
}

bool ClusterCache::namespace_going(const std::string& ns) const {
  auto space = namespaces_->store().get(ns);
  return space && kube::object_at(*space, "metadata").contains("deletionTimestamp");
}

std::string ClusterCache::namespace_labels(const std::string& ns) const {
  auto object = namespaces_->store().get(ns);
  return object ? json_text(nlohmann::json(kube::labels_of(*object))) : "";
}

Tenancy ClusterCache::tenancy() const {
  Tenancy out;
  for (const auto& obj : tenants_->store().list()) {
    auto parsed = api::parse_tenant(*obj);
    if (!parsed.spec) {
      std::string errors;
      for (const auto& e : parsed.errors) errors += (errors.empty() ? "" : "; ") + e;
      out.invalid[kube::string_at(kube::object_at(*obj, "metadata"), "name")] = errors;
      continue;
    }
    tenancy::TenantObject t;
    t.spec = std::move(*parsed.spec);
    t.created = kube::time_at(kube::object_at(*obj, "metadata"), "creationTimestamp").value_or(kube::SystemTime{});
    t.status = kube::object_at(*obj, "status");
    out.tenants.push_back(std::move(t));
  }
  std::map<std::string, std::map<std::string, std::string>> namespaces;
  for (const auto& n : namespaces_->store().list())
    namespaces[kube::string_at(kube::object_at(*n, "metadata"), "name")] = kube::labels_of(*n);
  out.ownership = tenancy::assign_namespaces(out.tenants, namespaces);
  return out;
}

void ClusterCache::set_ownership(std::map<std::string, std::string> owner_of_namespace) {
  std::lock_guard lock(ownership_mu_);
  owner_of_namespace_ = std::move(owner_of_namespace);
}

std::optional<std::string> ClusterCache::owner_of_namespace(const std::string& ns) const {
  std::lock_guard lock(ownership_mu_);
  auto it = owner_of_namespace_.find(ns);
  if (it == owner_of_namespace_.end()) return std::nullopt;
  return it->second;
}

std::shared_ptr<const cost::Policy> ClusterCache::policy() const {
  std::lock_guard lock(policy_mu_);
  return policy_;
}

void ClusterCache::set_policy(std::shared_ptr<const cost::Policy> p) {
  std::lock_guard lock(policy_mu_);
  policy_ = std::move(p);
}

planner::NodeFacts ClusterCache::node_facts() const {
  planner::NodeFacts facts = options_.node_facts;
  if (auto p = policy()) facts.spot_labels = p->spot_labels;
  return facts;
}

}  // namespace valley::task
