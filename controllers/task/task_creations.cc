// The TrainingTask reconciler's creations: what a decision creates (less what an earlier reconcile
// created and the informers have not shown yet), sent at once through the request pool, and what
// the API server's refusals mean for the task. The SSH key Secret is asked for by name.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "controllers/api/pod.h"
#include "controllers/render/network_policy.h"
#include "controllers/render/render.h"
#include "controllers/render/seat_claims.h"
#include "controllers/render/ssh_keys.h"
#include "controllers/render/transfers.h"
#include "controllers/task/task_reconciler.h"
#include "operator/kube/error.h"
#include "operator/kube/field_mask.h"
#include "operator/kube/json_fields.h"
#include "operator/kube/store.h"

namespace valley::task {

namespace res = kube::resources;

std::vector<TaskReconciler::Creation> TaskReconciler::creations_of(const lifecycle::Observed& o, const lifecycle::Decision& d) {
  std::vector<Creation> creations;
  const std::string ns = kube::string_at(kube::object_at(o.task, "metadata"), "namespace");
  if (d.create_ssh_secret && o.parsed.spec)
    creations.push_back({&res::kSecrets, render::ssh_secret(*o.parsed.spec, render::generate_ssh_key_pair(o.parsed.spec->name)), "", false, {}});
  // A worker on DRA GPUs names a claim template: made before it, unless this process made it already
  // (409 when it exists: fine).
  const std::string uid = kube::string_at(kube::object_at(o.task, "metadata"), "uid");
  std::set<std::string> templates;
  for (const auto& object : d.create) {
    if (object.value("kind", "") != "Pod" || !o.parsed.spec) continue;
    const auto claimed = api::claimed_gpus(
        kube::string_at(kube::object_at(kube::object_at(object, "metadata"), "annotations"), api::kClaimedGpusAnnotation));
    const int count = static_cast<int>(claimed.count);
    const std::string name = render::gpu_claim_template_name(*o.parsed.spec, claimed.device_class, count);
    if (count > 0 && templates.insert(name).second && !owned_object_known(res::kResourceClaimTemplates, ns, name, uid))
      creations.push_back({&res::kResourceClaimTemplates, render::gpu_claim_template(*o.parsed.spec, claimed.device_class, count), "", false, {}});
  }
  for (const auto& object : d.create) {
    const std::string kind = object.value("kind", "");
    if (kind == "NetworkPolicy") {  // not watched: remembered once made (owned_object_created)
      creations.push_back({&res::kNetworkPolicies, object, "", false, {}});
      continue;
    }
    if (kind == "PersistentVolumeClaim") {  // a node's data cache: not watched either
      if (!owned_object_known(res::kPersistentVolumeClaims, ns, object["metadata"].value("name", ""), uid))
        creations.push_back({&res::kPersistentVolumeClaims, object, "", false, {}});
      continue;
    }
    const kube::Resource* r = kind == "Pod" ? &res::kPods : &res::kServices;
    const std::string object_name = object["metadata"].value("name", "");
    std::string id = expectation_id(kind, ns, object_name);
    // Created a moment ago and on its way to the cache, or come into the cache since this reconcile
    // read it (the watch met the expectation meanwhile). In that order: the informer stores an
    // object before it meets its expectation.
    if (expectations_.pending(id) || !cache_.cached_uid(*r, ns, object_name).empty()) continue;
    creations.push_back({r, object, std::move(id), false, {}});
  }
  return creations;
}

std::vector<TaskReconciler::Creation> TaskReconciler::seat_workers(const lifecycle::Observed& o, lifecycle::Decision& d,
                                                                     const std::vector<planner::PodPtr>& owned) {
  std::vector<Creation> creations;
  if (!o.parsed.spec) return creations;
  const api::TaskSpec& spec = *o.parsed.spec;
  const std::string key = spec.ns + "/" + spec.name;
  std::vector<render::SeatsClaim> claims;
  for (const auto& c : cache_.claims().store().by_index(kube::ObjectTraits<api::DraClaim>::kSeatsTaskIndex, key))
    claims.push_back({c->key.substr(c->key.find('/') + 1), c->seats_node, c->created, c->deleting});
  const bool seats = std::any_of(d.create.begin(), d.create.end(), [](const nlohmann::json& object) {
    return kube::object_at(kube::object_at(object, "metadata"), "annotations").contains(api::kGpuSeatAnnotation);
  });
  if (claims.empty() && !seats) return creations;
  std::vector<const api::Pod*> pods;
  for (const auto& p : owned) pods.push_back(p.get());
  // A claim made a moment ago may have no pod in the cache yet: it is kept this long.
  constexpr std::chrono::seconds kUnusedClaimGrace{60};
  auto seating = render::seat_workers(spec, d.create, claims, pods, o.now, kUnusedClaimGrace);
  for (auto& claim : seating.claims_to_create) creations.push_back({&res::kResourceClaims, std::move(claim), "", false, {}});
  for (const auto& name : seating.claims_to_delete) {
    try {
      client_.remove(res::kResourceClaims, spec.ns, name);
      spdlog::info("{}: deleted seats claim {}: no worker sits on it", key, name);
    } catch (const kube::KubeError& e) {
      if (e.http_status() != 404) spdlog::warn("{}: delete seats claim {}: {}", key, name, e.what());
    }
  }
  return creations;
}

void TaskReconciler::send_one(const std::string& ns, Creation& c) {
  try {
    // Of the answer, only the identity the expectations need is built (a pod's is ~5 KB of JSON).
    static const kube::FieldMask kIdentity = kube::FieldMask::only({{"metadata", kube::FieldMask::only({{"name", kube::FieldMask::all()},
                                                                                                        {"namespace", kube::FieldMask::all()},
                                                                                                        {"uid", kube::FieldMask::all()},
                                                                                                        {"resourceVersion", kube::FieldMask::all()}})}});
    const nlohmann::json made = client_.create(*c.resource, ns, c.object, &kIdentity);
    c.created = true;
    if (!c.id.empty()) expect(c.id, *c.resource, ns, made);
  } catch (const kube::KubeError& e) {
    c.error = e;
  }
}

bool TaskReconciler::create(const std::string& key, const lifecycle::Observed& o, std::vector<Creation>& creations, bool* namespace_going) {
  const auto& meta = kube::object_at(o.task, "metadata");
  const std::string ns = kube::string_at(meta, "namespace"), name = kube::string_at(meta, "name"), uid = kube::string_at(meta, "uid");
  // What a pod needs before it starts (its SSH keys, its NetworkPolicy, its GPU claim template) is
  // made first: a pod must never run unisolated, and one whose template is missing only waits.
  const auto pods_begin = std::stable_partition(creations.begin(), creations.end(), [](const Creation& c) {
    return c.resource != &res::kPods && c.resource != &res::kServices;
  });
  const size_t prerequisites = static_cast<size_t>(pods_begin - creations.begin());
  auto send = [&](size_t from, size_t to) {
    requests_->run_all(to - from, [&](size_t k) { send_one(ns, creations[from + k]); });
  };
  send(0, prerequisites);
  // A 409 is "there already": ours (made before a restart), or an older task's of the same name
  // that the garbage collector is about to remove, whose keys are not this task's and which would
  // leave its pods unisolated once gone: then the pods wait for it to go. (One with no owner at all
  // will never go; it is used as it is. Claim templates cannot be read back: any of the name serves.)
  std::string in_the_way;
  const bool ready = std::all_of(creations.begin(), creations.begin() + static_cast<std::ptrdiff_t>(prerequisites), [&](const Creation& c) {
    if (c.created) return true;
    if (!c.error || c.error->http_status() != 409) return false;
    const std::string object = c.object["metadata"].value("name", "");
    if (c.resource == &res::kResourceClaimTemplates || c.resource == &res::kResourceClaims ||
        owner_of(*c.resource, ns, object, uid) != Owner::AnotherTask)
      return true;
    in_the_way = c.resource->kind + " " + object;
    return false;
  });
  if (ready) send(prerequisites, creations.size());
  if (!in_the_way.empty()) {
    // An Event, so a wait that lasts (a garbage collector held up) is the user's to see.
    events_.normal(o.task, "WaitingForOlderObject", "Create",
                   in_the_way + " still belongs to an older task of the same name; the pods wait until it is removed");
    loop_.queue().add_after(key, std::chrono::seconds(2));
  }
  // The outcomes, prerequisites first. After a refusal that retrying will not heal, later
  // refusals are not reported again: the first says it all, and a task that keeps failing is
  // retried with backoff.
  bool ok = true, refusal = false, pod_created = false;
  for (const Creation& c : creations) {
    if (c.created) {
      if (c.resource == &res::kSecrets || c.resource == &res::kNetworkPolicies || c.resource == &res::kResourceClaimTemplates ||
          c.resource == &res::kPersistentVolumeClaims)
        owned_object_created(*c.resource, ns, c.object["metadata"].value("name", ""), uid);
      if (c.resource == &res::kPods) pod_created = true;
      continue;
    }
    if (!c.error || refusal || *namespace_going) continue;
    const kube::KubeError& e = *c.error;
    if (e.http_status() == 409) continue;  // made already (by us, before a restart or a stale cache)
    ok = false;
    if (kube::namespace_terminating(e)) {
      // The namespace's deletion removes the task too: nothing to create, no one to tell.
      *namespace_going = true;
      continue;
    }
    refusal = e.http_status() == 400 || e.http_status() == 403 || e.http_status() == 422;
    spdlog::warn("{}: create {} {}: {}", key, c.resource->kind, c.object["metadata"].value("name", ""), e.what());
    if (refusal) refused(key, o, c, e);
  }
  if (pod_created && o.refusal) {
    refusals_.forget(key);  // accepted now: PodsCreated turns True in the next reconcile
    loop_.queue().add_after(key, std::chrono::seconds(1));
  }
  if (refusal && !ok && refusals_.blocking(key)) {
    // A blocking refusal is not retried with backoff: the next reconcile reports it and waits for a change.
    enqueue(key);
    ok = true;
  }
  return ok;
}

void TaskReconciler::refused(const std::string& key, const lifecycle::Observed& o, const Creation& c, const kube::KubeError& e) {
  // Refusals that will not heal by retrying are the user's to see (bad resources in the spec, a
  // quota, an admission policy), in an Event and the PodsCreated condition.
  const std::string what = c.resource->kind + " " + c.object["metadata"].value("name", "") + ": " + e.what();
  events_.warning(o.task, "CreateFailed", "Create", what);
  lifecycle::CreateRefusal refusal;
  const bool pod_security = std::string(e.what()).find("violates PodSecurity") != std::string::npos;
  refusal.reason = pod_security ? "PodSecurity" : e.http_status() == 403 ? "Forbidden" : "Invalid";
  refusal.blocking = pod_security || e.http_status() != 403;
  refusal.message = what;
  if (pod_security)
    refusal.message += " (the namespace's Pod Security level refuses the pods: set spec.podSecurity.level: Restricted, or run"
                       " Valley with --pod-security=Restricted; MPI images must then run sshd as the pod's user on port 2222)";
  const auto& meta = kube::object_at(o.task, "metadata");
  const bool blocking = refusal.blocking;
  refusals_.record(key, kube::string_at(meta, "uid"), o.parsed.spec ? o.parsed.spec->generation : 0,
                   cache_.namespace_labels(kube::string_at(meta, "namespace")), std::move(refusal));
  if (blocking) replan_();  // it holds no capacity now
}

void TaskReconciler::expect(const std::string& id, const kube::Resource& r, const std::string& ns, const nlohmann::json& made) {
  const auto& meta = kube::object_at(made, "metadata");
  const std::string uid = kube::string_at(meta, "uid");
  expectations_.expect(id, uid);
  // The watch may have shown it before the create's answer came back: then it is met already.
  if (!uid.empty() && cache_.cached_uid(r, ns, kube::string_at(meta, "name")) == uid) expectations_.observed(id, uid);
}

// Secrets, NetworkPolicies and claim templates are neither listed nor watched (for Secrets, RBAC grants get and
// create only): whether the task's exists is asked once and remembered per task incarnation (UID).
namespace {
// Ordered by namespace and name: a task's objects, all named "<task>-...", are neighbours.
std::string owned_key(const kube::Resource& r, const std::string& ns, const std::string& name, const std::string& uid) {
  return ns + "/" + name + " " + r.kind + "@" + uid;
}
}  // namespace

bool TaskReconciler::owned_object_known(const kube::Resource& r, const std::string& ns, const std::string& name, const std::string& uid) {
  std::lock_guard lock(known_owned_mu_);
  return known_owned_.count(owned_key(r, ns, name, uid)) > 0;
}

TaskReconciler::Owner TaskReconciler::owner_of(const kube::Resource& r, const std::string& ns, const std::string& name, const std::string& uid) {
  if (owned_object_known(r, ns, name, uid)) return Owner::ThisTask;
  try {
    auto object = client_.get(r, ns, name);
    const auto refs = object["metadata"].value("ownerReferences", nlohmann::json::array());
    for (const auto& ref : refs)
      if (ref.value("uid", "") == uid) {
        owned_object_created(r, ns, name, uid);
        return Owner::ThisTask;
      }
    return refs.empty() ? Owner::Nobody : Owner::AnotherTask;  // another: an older task's, about to be collected
  } catch (const kube::KubeError&) {
    return Owner::Unknown;  // 404, or unknown: creating it answers (409 = there)
  }
}

bool TaskReconciler::owned_object_exists(const kube::Resource& r, const std::string& ns, const std::string& name, const std::string& uid) {
  return owner_of(r, ns, name, uid) == Owner::ThisTask;
}

void TaskReconciler::owned_object_created(const kube::Resource& r, const std::string& ns, const std::string& name, const std::string& uid) {
  std::lock_guard lock(known_owned_mu_);
  known_owned_.insert(owned_key(r, ns, name, uid));
}

void TaskReconciler::forget_owned_objects(const std::string& task_key) {
  // Every "<task>-..." of the namespace; a neighbour's whose name shares the prefix may go too,
  // which costs one read to learn again.
  const std::string prefix = task_key + "-";
  std::lock_guard lock(known_owned_mu_);
  for (auto it = known_owned_.lower_bound(prefix); it != known_owned_.end() && it->rfind(prefix, 0) == 0;) it = known_owned_.erase(it);
  for (auto it = caches_released_.lower_bound(task_key + "@"); it != caches_released_.end() && it->rfind(task_key + "@", 0) == 0;)
    it = caches_released_.erase(it);
}

bool TaskReconciler::release_data_caches(const std::string& key, const lifecycle::Observed& o, const lifecycle::Decision& d) {
  if (!o.parsed.spec || !o.parsed.spec->data || !lifecycle::finished(d.status.value("phase", ""))) return true;
  const std::string uid = kube::string_at(kube::object_at(o.task, "metadata"), "uid");
  const std::string done = key + "@" + uid;
  {
    std::lock_guard lock(known_owned_mu_);
    if (caches_released_.count(done)) return true;
  }
  const api::TaskSpec& spec = *o.parsed.spec;
  try {
    kube::ListOptions lo;
    lo.label_selector = render::task_selector(spec.name) + "," + render::label::kRole + "=" + render::kDataCacheRole;
    for (const auto& claim : client_.list(res::kPersistentVolumeClaims, spec.ns, lo).items) {
      const auto& meta = kube::object_at(claim, "metadata");
      const auto owners = kube::index::by_owner_uid(claim);
      if (std::find(owners.begin(), owners.end(), uid) == owners.end()) continue;
      kube::DeleteOptions opts;
      opts.precondition_uid = kube::string_at(meta, "uid");
      client_.remove(res::kPersistentVolumeClaims, spec.ns, kube::string_at(meta, "name"), opts);
      spdlog::info("{}: deleted data cache {} (node {}): the task has ended", key, kube::string_at(meta, "name"),
                   kube::string_at(kube::object_at(meta, "annotations"), "valley.dev/node"));
    }
  } catch (const kube::KubeError& e) {
    if (e.http_status() != 404) {
      spdlog::warn("{}: delete its data caches: {}", key, e.what());
      return false;
    }
  }
  std::lock_guard lock(known_owned_mu_);
  caches_released_.insert(done);
  return true;
}

}  // namespace valley::task
