#include "controllers/inputs/cluster_snapshot.h"

#include <algorithm>

#include "controllers/api/quantity.h"
#include "controllers/gpu/pod_requests.h"
#include "controllers/inputs/dra_devices.h"
#include "controllers/render/render.h"
#include "operator/kube/json_fields.h"

namespace valley::planner {
namespace {

std::string key_of(const json& object) {
  const json& meta = kube::object_at(object, "metadata");
  const std::string ns = kube::string_at(meta, "namespace");
  return ns.empty() ? kube::string_at(meta, "name") : ns + "/" + kube::string_at(meta, "name");
}

// Where a pod holds GPUs: its node once bound, else the node its affinity pins it to.
const std::string& node_of_pod(const api::Pod& pod) { return pod.node_name.empty() ? pod.pinned : pod.node_name; }

// "ns/task" when the pod is one of Valley's workers, else "".
std::string worker_of(const api::Pod& pod, std::string* epoch) {
  if (!pod.made_by_valley() || pod.label(render::label::kRole) != "worker") return "";
  *epoch = pod.label(render::label::kEpoch);
  return pod.ns + "/" + pod.label(render::label::kTask);
}

// A node's free units less what its pods hold: GPUs from `free`, what else kube-scheduler checks
// from `room`.
void take_held(Node& n, const std::map<std::string, int64_t>& held) {
  for (const auto& [resource, units] : held) {
    if (units == 0) continue;
    if (!api::is_node_room_resource(resource)) {
      n.free[counted_as(n, resource)] -= units;
    } else if (auto r = n.room.find(resource); r != n.room.end()) {
      r->second -= units;
    }
  }
}

// Less what claims Valley did not make hold: only of DRA GPUs the node counts as its own.
void take_claimed(Node& n, const std::map<std::string, int64_t>& held) {
  for (const auto& [resource, units] : held)
    if (n.capacity.count(resource)) n.free[resource] -= units;
}

// The view's entry of a task from its object and pods (by name).
std::shared_ptr<const SnapshotView::TaskEntry> task_entry(const std::string& key, const ObjectPtr& task,
                                                          const std::shared_ptr<const api::ParsedTask>& parsed,
                                                          const PodRooms& rooms, std::vector<PodPtr> owned) {
  auto e = std::make_shared<SnapshotView::TaskEntry>();
  e->key = key;
  e->object = task;
  e->parsed = parsed;
  e->owned = std::move(owned);
  std::vector<const api::Pod*> pods;
  for (const auto& p : e->owned) {
    pods.push_back(p.get());
    if (!p->node_name.empty()) continue;
    SnapshotView::Waiting w{p, p->pinned, std::nullopt, ""};
    if (w.node.empty()) continue;
    for (const auto& c : p->conditions) {
      if (c.type != "PodScheduled" || c.status != "False") continue;
      w.refused_since = c.last_transition;
      w.refusal = c.message;
      break;
    }
    e->waiting.push_back(std::move(w));
  }
  if (parsed->spec) {
    Task t = task_with_pods(*parsed->spec, *task, pods);
    lay_rooms(t, rooms);
    e->task = std::make_shared<const Task>(std::move(t));
  }
  return e;
}

}  // namespace

bool operator==(const NodeFacts& a, const NodeFacts& b) {
  return a.spot_labels == b.spot_labels && a.disruption_taints == b.disruption_taints && a.gpu_fault_conditions == b.gpu_fault_conditions &&
         a.gpu_fault_taints == b.gpu_fault_taints && a.dra_drivers == b.dra_drivers &&
         a.dra_product_attributes == b.dra_product_attributes;
}

void ClusterSnapshot::set_facts(const NodeFacts& facts) {
  if (facts == facts_) return;
  facts_ = facts;
  for (const auto& [name, object] : slice_objects_) slices_[name] = api::dra_slice_from(*object, facts_.dra_product_attributes);
  for (auto& [name, entry] : nodes_) entry = {entry.object, std::make_shared<const Node>(read_node(entry.object)), nullptr};
  claims_stale_ = true;
}

Node ClusterSnapshot::read_node(const ObjectPtr& object) const {
  Node n = node_from(*object, facts_);
  if (auto names = slices_by_node_.find(n.name); names != slices_by_node_.end()) {
    std::vector<const api::DraSlice*> own;
    for (const auto& name : names->second) own.push_back(&slices_.at(name));
    add_dra_devices(n, own, facts_);
  }
  return n;
}

std::vector<const api::DraSlice*> ClusterSnapshot::slice_list() const {
  std::vector<const api::DraSlice*> out;
  out.reserve(slices_.size());
  for (const auto& [name, slice] : slices_) out.push_back(&slice);
  return out;
}

void ClusterSnapshot::reread_node(const std::string& name) {
  if (auto it = nodes_.find(name); it != nodes_.end())
    it->second = {it->second.object, std::make_shared<const Node>(read_node(it->second.object)), nullptr};
}

void ClusterSnapshot::upsert_node(const ObjectPtr& node) {
  const std::string name = key_of(*node);
  nodes_[name] = {node, std::make_shared<const Node>(read_node(node)), nullptr};
}

void ClusterSnapshot::upsert_slice(const ObjectPtr& slice) {
  const std::string name = key_of(*slice);
  remove_slice(name);
  slice_objects_[name] = slice;
  api::DraSlice s = api::dra_slice_from(*slice, facts_.dra_product_attributes);
  const std::string node = s.node;
  slices_[name] = std::move(s);
  slices_by_node_[node].insert(name);
  reread_node(node);
  claims_stale_ = true;
}

void ClusterSnapshot::remove_slice(const std::string& name) {
  auto it = slices_.find(name);
  if (it == slices_.end()) return;
  const std::string node = it->second.node;
  slices_.erase(it);
  slice_objects_.erase(name);
  if (auto names = slices_by_node_.find(node); names != slices_by_node_.end() && names->second.erase(name) && names->second.empty())
    slices_by_node_.erase(names);
  reread_node(node);
  claims_stale_ = true;
}

void ClusterSnapshot::upsert_claim(const ClaimPtr& claim) {
  auto& entry = claims_[claim->key];
  if (entry == *claim) return;
  entry = *claim;
  claims_stale_ = true;
}

void ClusterSnapshot::remove_claim(const std::string& key) {
  if (claims_.erase(key)) claims_stale_ = true;
}

void ClusterSnapshot::recount_claims() {
  if (!claims_stale_) return;
  claims_stale_ = false;
  std::vector<const api::DraClaim*> claims;
  for (const auto& [key, c] : claims_) claims.push_back(&c);
  const auto slices = slice_list();
  auto held = held_by_claims(slices, claims, facts_);
  seats_held_ = held_by_seats_claims(slices, claims, facts_);
  for (const auto* side : {&held, &claim_held_})
    for (const auto& [node, units] : *side) {
      auto before = claim_held_.find(node);
      auto after = held.find(node);
      const bool same = before != claim_held_.end() && after != held.end() && before->second == after->second;
      if (!same)
        if (auto n = nodes_.find(node); n != nodes_.end()) n->second.view = nullptr;
    }
  claim_held_ = std::move(held);
}

void ClusterSnapshot::remove_node(const std::string& name) { nodes_.erase(name); }

std::shared_ptr<const Node> ClusterSnapshot::node(const std::string& name) const {
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return nullptr;
  return it->second.node;
}

std::vector<Node> ClusterSnapshot::nodes() const {
  std::vector<Node> out;
  out.reserve(nodes_.size());
  for (const auto& [name, entry] : nodes_) out.push_back(*entry.node);
  return out;
}

void ClusterSnapshot::hold(const PodEntry& p, int sign) {
  if (p.node.empty()) return;
  auto& held = held_[p.node];
  for (const auto& [resource, units] : p.usage) held[resource] += sign * units;
  for (const auto& [resource, units] : p.room) held[resource] += sign * units;
  if (auto n = nodes_.find(p.node); n != nodes_.end() && (!p.usage.empty() || !p.room.empty())) n->second.view = nullptr;
}

void ClusterSnapshot::touch_owner(const std::string& uid) {
  if (auto t = task_by_uid_.find(uid); t != task_by_uid_.end())
    if (auto entry = tasks_.find(t->second); entry != tasks_.end()) entry->second.view = nullptr;
}

void ClusterSnapshot::upsert_pod(const PodPtr& pod) {
  const std::string key = pod->key();
  remove_pod(key);
  PodEntry p;
  p.object = pod;
  p.node = node_of_pod(*pod);
  p.usage = gpu::gpu_usage(*pod);
  p.room = room_usage(*pod);
  p.worker_of = worker_of(*pod, &p.epoch);
  hold(p, +1);
  for (const auto& uid : pod->owner_uids) {
    pods_by_owner_[uid][key] = pod;
    touch_owner(uid);
  }
  if (!p.worker_of.empty() && !p.node.empty()) {
    auto& w = workers_[p.worker_of];
    w.by_pod[key] = {p.node, p.usage, p.epoch, p.room};
    w.view = nullptr;
  }
  pods_.emplace(key, std::move(p));
}

void ClusterSnapshot::remove_pod(const std::string& key) {
  auto it = pods_.find(key);
  if (it == pods_.end()) return;
  hold(it->second, -1);
  if (auto w = workers_.find(it->second.worker_of); w != workers_.end() && w->second.by_pod.erase(key)) {
    w->second.view = nullptr;
    if (w->second.by_pod.empty()) workers_.erase(w);
  }
  for (const auto& uid : it->second.object->owner_uids) {
    if (auto owned = pods_by_owner_.find(uid); owned != pods_by_owner_.end()) {
      owned->second.erase(key);
      if (owned->second.empty()) pods_by_owner_.erase(owned);
    }
    touch_owner(uid);
  }
  pods_.erase(it);
}

void ClusterSnapshot::upsert_task(const ObjectPtr& task) {
  const std::string key = key_of(*task);
  TaskEntry t;
  t.object = task;
  const json& meta = kube::object_at(*task, "metadata");
  t.uid = kube::string_at(meta, "uid");
  // Most events are status writes: the parse and the worker's room (a rendered pod) are kept
  // while what parse_task reads is what it was (the same key, so the same name and namespace).
  auto same_parse_input = [&](const json& before) {
    const json& before_meta = kube::object_at(before, "metadata");
    return kube::string_at(before_meta, "uid") == t.uid && kube::int_at(before_meta, "generation") == kube::int_at(meta, "generation") &&
           kube::object_at(before, "spec") == kube::object_at(*task, "spec");
  };
  if (auto old = tasks_.find(key); old != tasks_.end() && same_parse_input(*old->second.object)) {
    t.parsed = old->second.parsed;
    t.rooms = std::move(old->second.rooms);
  } else {
    t.parsed = std::make_shared<const api::ParsedTask>(api::parse_task(*task));
    if (t.parsed->spec) t.rooms = pod_rooms(*t.parsed->spec);
  }
  remove_task(key);
  task_by_uid_[t.uid] = key;
  tasks_.emplace(key, std::move(t));
}

void ClusterSnapshot::remove_task(const std::string& key) {
  auto it = tasks_.find(key);
  if (it == tasks_.end()) return;
  if (auto u = task_by_uid_.find(it->second.uid); u != task_by_uid_.end() && u->second == key) task_by_uid_.erase(u);
  tasks_.erase(it);
}

SnapshotView ClusterSnapshot::view() {
  recount_claims();
  SnapshotView v;
  v.nodes.reserve(nodes_.size());
  for (auto& [name, entry] : nodes_) {
    if (!entry.view) {
      Node n = *entry.node;
      if (auto held = held_.find(name); held != held_.end()) take_held(n, held->second);
      if (auto held = claim_held_.find(name); held != claim_held_.end()) take_claimed(n, held->second);
      entry.view = std::make_shared<const Node>(std::move(n));
    }
    v.nodes.push_back(entry.view);
  }
  v.tasks.reserve(tasks_.size());
  for (auto& [key, t] : tasks_) {
    if (!t.view) {
      std::vector<PodPtr> owned;
      if (auto pods = pods_by_owner_.find(t.uid); pods != pods_by_owner_.end())
        for (const auto& [pod_key, pod] : pods->second)
          if (pod->ns + "/" == key.substr(0, pod->ns.size() + 1)) owned.push_back(pod);  // owners are namespaced
      t.view = task_entry(key, t.object, t.parsed, t.rooms, std::move(owned));
    }
    v.tasks.push_back(t.view);
  }
  for (auto& [task, w] : workers_) {
    if (!w.view) {
      std::vector<SnapshotView::Worker> list;
      for (const auto& [pod_key, worker] : w.by_pod) list.push_back(worker);
      w.view = std::make_shared<const std::vector<SnapshotView::Worker>>(std::move(list));
    }
    v.workers.emplace_hint(v.workers.end(), task, w.view);
  }
  v.shared_devices = seats_held_;
  return v;
}

HeldByPlanned held_by_planned(const SnapshotView& view, const std::function<std::optional<PlannedTask>(const std::string&)>& planned_of,
                             const std::function<bool(const std::string&)>& node_known) {
  HeldByPlanned returned;
  returned.reserve(view.workers.size());
  // What the plan's input has the task take, by node and resource, less what was given back so far.
  struct Room {
    const std::string* node;
    const std::string* resource;
    int64_t units;
  };
  std::vector<Room> room;
  std::vector<Room*> here;
  // A gang's workers mostly share the node of the worker before: node_known asked, and the node's
  // entry in what is given back found, once for them (an unordered_map's entries stay in place).
  const std::string* last_node = nullptr;
  bool last_known = false;
  std::map<std::string, int64_t>* last_returned = nullptr;
  for (const auto& [task_key, workers] : view.workers) {
    const auto planned = planned_of(task_key);
    if (!planned) continue;
    room.clear();
    for (const auto& w : *planned->workers) {
      auto same = std::find_if(room.begin(), room.end(), [&](const Room& x) { return *x.node == w.node && *x.resource == w.gpu_resource; });
      if (same == room.end())
        room.push_back({&w.node, &w.gpu_resource, w.count});
      else
        same->units += w.count;
    }
    for (const auto& w : *workers) {
      if (w.epoch != *planned->epoch) continue;
      if (!last_node || w.node != *last_node) {
        last_node = &w.node;
        last_known = node_known(w.node);
        last_returned = nullptr;
      }
      if (!last_known) continue;
      // The plan input's room on this worker's node, found once for all it uses (node names share
      // long prefixes; resource names seldom do).
      here.clear();
      for (Room& x : room)
        if (*x.node == w.node) here.push_back(&x);
      if (here.empty()) continue;
      bool given_back = false;
      for (const auto& used : w.usage) {  // (not a structured binding: clang's lambdas cannot capture one)
        const std::string& resource = used.first;
        const int64_t units = used.second;
        if (units == 0) continue;
        auto found = std::find_if(here.begin(), here.end(), [&](const Room* x) { return *x->resource == resource; });
        if (found == here.end()) continue;
        Room* r = *found;
        if (r->units <= 0) continue;
        const int64_t given = std::min(units, r->units);
        r->units -= given;
        if (!last_returned) last_returned = &returned[w.node];
        (*last_returned)[resource] += given;
        given_back = true;
      }
      // The plan places the worker again, and takes what its pod asks for besides GPUs with it.
      if (given_back)
        for (const auto& [resource, units] : w.room) (*last_returned)[resource] += units;
    }
  }
  return returned;
}

SnapshotView rebuild(const std::vector<ObjectPtr>& nodes, const std::vector<PodPtr>& pods, const std::vector<ObjectPtr>& tasks,
                     const NodeFacts& facts, const std::vector<ObjectPtr>& slice_objects, const std::vector<ClaimPtr>& claim_objects) {
  SnapshotView v;
  std::map<std::string, std::vector<SnapshotView::Worker>> workers;
  std::map<std::string, api::DraSlice> slices;  // by name: the newest object of a name wins, as in a cache
  for (const auto& s : slice_objects) slices[key_of(*s)] = api::dra_slice_from(*s, facts.dra_product_attributes);
  std::vector<const api::DraSlice*> all_slices;
  for (const auto& [name, s] : slices) all_slices.push_back(&s);
  std::map<std::string, Node> by_name;
  for (const auto& n : nodes) {
    Node node = node_from(*n, facts);
    add_dra_devices(node, all_slices, facts);
    by_name[key_of(*n)] = std::move(node);
  }
  std::map<std::string, api::DraClaim> claims;  // by key: the newest of a key wins, as in a cache
  for (const auto& c : claim_objects) claims[c->key] = *c;
  std::vector<const api::DraClaim*> all_claims;
  for (const auto& [key, c] : claims) all_claims.push_back(&c);
  for (const auto& [node, held] : held_by_claims(all_slices, all_claims, facts))
    if (auto n = by_name.find(node); n != by_name.end()) take_claimed(n->second, held);
  v.shared_devices = held_by_seats_claims(all_slices, all_claims, facts);
  std::map<std::string, PodPtr> pods_by_key;
  for (const auto& p : pods) pods_by_key[p->key()] = p;
  for (const auto& [key, p] : pods_by_key) {
    const std::string node = node_of_pod(*p);
    if (auto n = by_name.find(node); n != by_name.end()) {
      take_held(n->second, gpu::gpu_usage(*p));
      take_held(n->second, room_usage(*p));
    }
    std::string epoch;
    if (const std::string task = worker_of(*p, &epoch); !task.empty() && !node.empty())
      workers[task].push_back({node, gpu::gpu_usage(*p), epoch, room_usage(*p)});
  }
  for (auto& [task, list] : workers) v.workers[task] = std::make_shared<const std::vector<SnapshotView::Worker>>(std::move(list));
  for (auto& [name, n] : by_name) v.nodes.push_back(std::make_shared<const Node>(std::move(n)));
  std::map<std::string, ObjectPtr> tasks_by_key;
  for (const auto& t : tasks) tasks_by_key[key_of(*t)] = t;
  for (const auto& [key, t] : tasks_by_key) {
    const std::string uid = kube::string_at(kube::object_at(*t, "metadata"), "uid");
    std::vector<PodPtr> owned;
    for (const auto& [pod_key, p] : pods_by_key)
      for (const auto& owner : p->owner_uids)
        if (owner == uid) {
          owned.push_back(p);
          break;
        }
    auto parsed = std::make_shared<const api::ParsedTask>(api::parse_task(*t));
    const PodRooms rooms = parsed->spec ? pod_rooms(*parsed->spec) : PodRooms{};
    v.tasks.push_back(task_entry(key, t, parsed, rooms, std::move(owned)));
  }
  return v;
}

}  // namespace valley::planner
