#include "controllers/task/metrics.h"

#include <map>
#include <tuple>

#include "controllers/api/tenant.h"
#include "controllers/gpu/pod_requests.h"
#include "controllers/gpu/resources.h"
#include "controllers/render/render.h"
#include "controllers/task/cluster_cache.h"
#include "operator/kube/json_fields.h"
#include "operator/kube/workqueue.h"

namespace valley::task {

ControllerMetrics& controller_metrics() {
  static ControllerMetrics instance;
  return instance;
}

namespace {

void collect_informers(ClusterCache& cache) {
  auto& m = controller_metrics();
  const std::pair<const char*, kube::InformerBase*> informers[] = {{"trainingtasks", &cache.tasks()}, {"pods", &cache.pods()},
                                                               {"nodes", &cache.nodes_informer()}, {"services", &cache.services()},
                                                               {"configmaps", &cache.configs()}, {"pricingpolicies", &cache.pricing()}};
  for (const auto& [name, inf] : informers) {
    const auto& st = inf->stats();
    m.watch_restarts.set({name}, static_cast<double>(st.watches.load() > 0 ? st.watches.load() - 1 : 0));
    m.relists.set({name}, static_cast<double>(st.expired.load()));
  }
}

void collect_tasks(ClusterCache& cache) {
  auto& m = controller_metrics();
  m.tasks.reset();
  m.workers.reset();
  m.task_gpu_percent.reset();
  m.task_idle_hours.reset();
  m.cost.reset();
  for (const char* phase : {"Pending", "Admitted", "Running", "Restarting", "Suspended", "Succeeded", "Failed"}) m.tasks.set({phase}, 0);
  std::map<std::pair<std::string, std::string>, int64_t> cost_micros;
  for (const auto& t : cache.task_list()) {
    const auto& status = kube::object_at(*t, "status");  // read in place: the metrics copy no status
    std::string phase = kube::string_at(status, "phase", "Pending");
    m.tasks.inc({phase.empty() ? "Pending" : phase});
    const std::string ns = (*t)["metadata"].value("namespace", "");
    if (phase == "Running" || phase == "Restarting" || phase == "Admitted")
      m.workers.set({ns, (*t)["metadata"].value("name", "")}, static_cast<double>(kube::int_at(status, "replicas").value_or(0)));
    if (const auto& use = kube::object_at(status, "utilization"); !use.empty() && !lifecycle::finished(phase)) {
      const std::string name = (*t)["metadata"].value("name", "");
      m.task_gpu_percent.set({ns, name}, static_cast<double>(kube::int_at(use, "gpuPercent").value_or(0)));
      m.task_idle_hours.set({ns, name}, static_cast<double>(kube::int_at(use, "idleGpuSeconds").value_or(0)) / 3600.0);
    }
    const auto& cost = kube::object_at(status, "cost");
    if (auto accrued = kube::int_at(cost, "accruedMicros")) cost_micros[{ns, kube::string_at(cost, "currency")}] += *accrued;
  }
  for (const auto& [k, v] : cost_micros) m.cost.set({k.first, k.second}, static_cast<double>(v) / 1e6);
}

void collect_gpus(ClusterCache& cache) {
  auto& m = controller_metrics();
  m.gpus.reset();
  m.gpu_capacity.reset();
  m.faulty_nodes.reset();
  std::map<std::string, planner::Node> nodes;
  std::map<std::tuple<std::string, std::string, std::string>, int64_t> capacity;
  for (auto& node : cache.nodes()) {
    if (node.schedulable)
      for (const auto& [resource, units] : node.capacity)
        capacity[{node.vendor, node.capacity_class, gpu::sharing_kind(resource)}] += gpu::share_milli(resource, units);
    if (!node.fault.empty()) {
      // "condition SysLogsXIDError: ..." / "taint nvidia.com/gpu-xid-error=true": the signal's name.
      const std::string signal = node.fault.substr(node.fault.find(' ') + 1);
      m.faulty_nodes.inc({signal.substr(0, signal.find_first_of(":="))});
    }
    std::string name = node.name;
    nodes.emplace(std::move(name), std::move(node));
  }
  std::map<std::pair<std::string, std::string>, int64_t> held;
  m.foreign_gpu_pods.reset();
  for (const auto& p : cache.pods().store().list()) {
    if (p->phase != "Running") continue;
    if (!p->made_by_valley()) {
      if (!gpu::gpu_usage(*p).empty()) m.foreign_gpu_pods.inc({p->ns});
      continue;
    }
    auto it = nodes.find(p->node_name);
    if (it == nodes.end()) continue;
    for (const auto& [resource, count] : gpu::gpu_usage(*p))
      held[{it->second.vendor, it->second.capacity_class}] += gpu::share_milli(resource, count);
  }
  for (const auto& [k, v] : held) m.gpus.set({k.first, k.second}, static_cast<double>(v) / 1000);
  for (const auto& [k, v] : capacity) m.gpu_capacity.set({std::get<0>(k), std::get<1>(k), std::get<2>(k)}, static_cast<double>(v) / 1000);
}

void collect_tenants(ClusterCache& cache) {
  auto& m = controller_metrics();
  for (auto* f : {&m.tenant_gpus, &m.tenant_share, &m.tenant_spend, &m.tenant_budget, &m.tenant_exhausted, &m.tenant_waiting}) f->reset();
  if (!cache.tenants().has_synced()) return;
  const auto p = cache.policy();
  const std::string currency = p ? p->currency : "USD";
  for (const auto& obj : cache.tenants().store().list()) {
    const std::string name = kube::string_at(kube::object_at(*obj, "metadata"), "name");
    const auto& st = kube::object_at(*obj, "status");
    const auto& usage = kube::object_at(st, "usage");
    for (const auto& [pool, u] : usage.items())
      for (const auto& [field, kind] : {std::pair{"usedMilli", "used"}, {"nominalMilli", "nominal"}, {"borrowedMilli", "borrowed"}, {"lentMilli", "lent"}})
        if (auto v = kube::int_at(u, field)) m.tenant_gpus.set({name, pool, kind}, static_cast<double>(*v) / 1000);
    try {
      m.tenant_share.set({name}, std::stod(kube::string_at(st, "share")));
    } catch (const std::exception&) {  // not written yet
    }
    if (auto spent = kube::int_at(kube::object_at(st, "spend"), "spentMicros")) m.tenant_spend.set({name, currency}, static_cast<double>(*spent) / 1e6);
    auto parsed = api::parse_tenant(*obj);
    if (parsed.spec && parsed.spec->budget) m.tenant_budget.set({name, currency}, static_cast<double>(parsed.spec->budget->amount) / 1e6);
    bool exhausted = false;
    for (const auto& c : kube::array_at(st, "conditions"))
      if (kube::string_at(c, "type") == "BudgetExhausted" && kube::string_at(c, "status") == "True") exhausted = true;
    m.tenant_exhausted.set({name}, exhausted ? 1 : 0);
    m.tenant_waiting.set({name}, static_cast<double>(kube::int_at(st, "waitingTasks").value_or(0)));
  }
}

}  // namespace

void collect_metrics(ClusterCache& cache, const std::vector<LabelledQueue>& queues) {
  auto& m = controller_metrics();
  for (const auto& q : queues) {
    m.depth.set({q.label}, static_cast<double>(q.queue->length()));
    m.delayed.set({q.label}, static_cast<double>(q.queue->delayed()));
  }
  collect_informers(cache);
  collect_tasks(cache);
  collect_gpus(cache);
  collect_tenants(cache);
}

}  // namespace valley::task
