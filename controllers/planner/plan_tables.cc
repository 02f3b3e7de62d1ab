// One plan's tables and what every phase asks of them (plan.h).
#include "controllers/planner/plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <string_view>
#include <tuple>

#include "controllers/api/money.h"

namespace valley::planner::detail {

using gpu::kTimeSliced;
using gpu::whole_resource;

namespace {
int whole_gpus(int gpu_milli) { return (gpu_milli + 999) / 1000; }
}  // namespace

Plan::Plan(std::vector<const Node*> nodes, const HeldByPlanned& held, std::vector<const Task*> tasks, SystemTime now, const Config& config)
    : tasks_(std::move(tasks)), now_(now), config_(config), nodes_(std::move(nodes)) {
  // The operator's snapshot hands them over in name order already: checking costs N compares,
  // sorting again N log N.
  auto by_name = [](const Node* a, const Node* b) { return a->name < b->name; };
  if (!std::is_sorted(nodes_.begin(), nodes_.end(), by_name)) std::sort(nodes_.begin(), nodes_.end(), by_name);
  // Resources: the room kube-scheduler checks (columns 0..kRoomColumns-1), the shapes' own
  // (time-sliced replicas, MIG slices), then whatever nodes and workers name (each vendor's whole
  // GPU among them).
  for (const char* r : kRoomResources) intern(r);
  time_sliced_ = intern(kTimeSliced);
  for (size_t p = 0; p < kMigCount; ++p) mig_[p] = intern(gpu::kMigProfiles[p].resource);
  std::vector<const std::map<std::string, int64_t>*> given_back(nodes_.size(), nullptr);
  std::vector<int> whole(nodes_.size(), -1);
  for (size_t k = 0; k < nodes_.size(); ++k) {
    const Node* n = nodes_[k];
    if (!n->vendor.empty()) whole[k] = intern(whole_of(*n));
    if (n->dra_shared && !n->dra_class.empty()) intern(gpu::dra_seat_resource(n->dra_class));
    for (const auto& [r, units] : n->free) intern(r);
    // A resource's id is only its column in the table (no scan goes by id order): interning what
    // is given back after `free` decides nothing.
    if (auto it = held.find(n->name); it != held.end()) {
      given_back[k] = &it->second;
      for (const auto& [r, units] : it->second) intern(r);
    }
    for (const auto& [r, units] : n->capacity) intern(r);
  }
  // Workers mostly name the same resource as the one before: a compare instead of a hash each.
  const std::string* last_interned = nullptr;
  for (size_t i = 0; i < tasks_.size(); ++i)
    for (const auto& w : tasks_[i].workers)
      if (!last_interned || w.gpu_resource != *last_interned) {
        intern(w.gpu_resource);
        last_interned = &w.gpu_resource;
      }
  width_ = names_.size();
  // A GPU share by resource id, so that the hot loops compare no resource names: seven units'
  // share, from which any count's is exact (MIG slices are sevenths).
  for (const auto& name : names_) share7_.push_back(gpu::share_milli(name, 7));
  free_.assign(nodes_.size() * width_, 0);
  opened_.assign(nodes_.size(), 0);
  pool_left_ = config_.pool_budgets;
  info_.resize(nodes_.size());
  by_name_.reserve(nodes_.size());
  std::map<std::string, int64_t> capacity;  // pool -> thousandths of a GPU
  for (size_t k = 0; k < nodes_.size(); ++k) {
    const Node* n = nodes_[k];
    NodeInfo& info = info_[k];
    by_name_.emplace(n->name, k);
    for (int c = 0; c < kRoomColumns; ++c) {
      auto it = n->room.find(kRoomResources[c]);
      free_[k * width_ + c] = it == n->room.end() ? kUnlimitedRoom : it->second;
    }
    for (const auto& [r, units] : n->free) free_[k * width_ + resource_id(r)] = units;
    if (given_back[k])
      for (const auto& [r, units] : *given_back[k])
        if (units != 0) free_[k * width_ + resource_id(r)] += units;
    info.price = price_at(*n, config_, now_);
    info.nvidia = n->vendor == "nvidia";
    info.spot = n->capacity_class == "spot";
    info.vendor = vendor_id(n->vendor);
    if (n->vendor.empty()) continue;
    info.whole = whole[k];
    if (auto r = gpu::replicas_of(n->replicas_resource)) {
      info.replicas = resource_id(n->replicas_resource);
      info.per_gpu = r->replicas;
      info.mps = r->sharing == gpu::Sharing::Mps;
    }
    info.seats = n->dra_shared && !n->dra_class.empty() && names_[info.whole] == gpu::dra_resource(n->dra_class);
    if (info.seats) info.seat = resource_id(gpu::dra_seat_resource(n->dra_class));
    info.pool = planner::pool_of(*n);
    pools_.insert(info.pool);
    if (n->schedulable)
      for (const auto& [r, units] : n->capacity) capacity[info.pool] += gpu::share_milli(r, units);
  }
  // Price groups numbered in key order; each node keeps its group's entry (a map's entries stay in
  // place) instead of building its key again to look it up.
  using GroupKey = std::tuple<std::string_view, std::string_view, int64_t, int64_t>;
  std::map<GroupKey, int> groups;
  std::vector<int*> group_of(nodes_.size(), nullptr);
  for (size_t k = 0; k < nodes_.size(); ++k)
    if (const Node* n = nodes_[k]; !n->vendor.empty())
      group_of[k] = &groups.emplace(GroupKey{n->vendor, n->capacity_class, n->price_micros, n->kw_milli}, 0).first->second;
  int group = 0;
  for (auto& entry : groups) entry.second = group++;
  for (size_t k = 0; k < nodes_.size(); ++k)
    if (group_of[k]) info_[k].price_group = *group_of[k];
  if (!config_.tenants.empty()) {
    std::map<std::string, std::map<std::string, PoolQuota>> quotas;
    for (const auto& [name, tenant] : config_.tenants) quotas[name] = tenant.quota;
    quota_ = QuotaBook(std::move(quotas), std::move(capacity));
  }
  demand_.resize(tasks_.size());
  for (size_t i = 0; i < tasks_.size(); ++i)
    for (int c = 0; c < kRoomColumns; ++c)
      if (auto it = tasks_[i].worker_room.find(kRoomResources[c]); it != tasks_[i].worker_room.end()) demand_[i][c] = std::max<int64_t>(0, it->second);
  sharers_.resize(nodes_.size());
  eligible_.resize(tasks_.size());
  may_share_.resize(tasks_.size());
  for (size_t i = 0; i < tasks_.size(); ++i) may_share_[i] = may_share(tasks_[i], config_);
  decisions_.resize(tasks_.size());
  for (size_t i = 0; i < tasks_.size(); ++i) decisions_[i].key = tasks_[i].key;
  // What keeps each bought node up: the admitted tasks' workers as the plan takes them (change()).
  lives_.resize(nodes_.size());
}

std::optional<SystemTime> Plan::end_of(size_t i) const {
  const Task& t = tasks_[i];
  if (t.expected_end) return t.expected_end;
  if (t.estimated_duration) return now_ + std::chrono::duration_cast<SystemTime::duration>(*t.estimated_duration);
  return std::nullopt;
}

int64_t Plan::extension_minutes(size_t i, size_t k) const {
  if (!config_.weigh_node_lifetimes || !bought_up(k)) return 0;
  const NodeLife& life = lives_[k];
  const auto end = end_of(i);
  if (!end || life.open_ended > 0) return 0;
  const SystemTime release = life.ends.empty() ? now_ : std::max(now_, *life.ends.rbegin());
  return *end > release ? std::chrono::duration_cast<std::chrono::minutes>(*end - release).count() : 0;
}

void Plan::note_life(size_t i, size_t k, int sign) {
  NodeLife& life = lives_[k];
  const auto end = end_of(i);
  if (sign < 0) {
    if (end)
      life.ends.insert(*end);
    else
      ++life.open_ended;
  } else if (end) {
    if (auto it = life.ends.find(*end); it != life.ends.end()) life.ends.erase(it);
  } else if (life.open_ended > 0) {
    --life.open_ended;
  }
}

int Plan::intern(const std::string& name) {
  auto [it, added] = resource_ids_.try_emplace(name, static_cast<int>(names_.size()));
  if (added) names_.push_back(name);
  return it->second;
}

int Plan::vendor_id(const std::string& vendor) {
  auto it = std::find(vendors_.begin(), vendors_.end(), vendor);
  if (it != vendors_.end()) return static_cast<int>(it - vendors_.begin());
  vendors_.push_back(vendor);
  return static_cast<int>(vendors_.size()) - 1;
}

bool Plan::may_place(size_t i, size_t k) {
  auto& cached = eligible_[i];
  if (cached.empty()) {
    cached.resize(nodes_.size());
    for (size_t n = 0; n < nodes_.size(); ++n) cached[n] = eligible(tasks_[i], *nodes_[n], config_);
  }
  return cached[k];
}

int Plan::fits(size_t i, size_t k, const int64_t* units, int cap) const {
  const Task& t = tasks_[i];
  const int whole = info_[k].whole;
  if (whole < 0 || cap <= 0) return 0;
  cap = room_fit(i, units, cap);
  if (cap <= 0) return 0;
  if (t.gpu_milli % 1000 == 0 && !shares_on(i, k)) {  // whole GPUs: the shape rule's answer, without trying it worker by worker
    const int64_t per = t.gpu_milli / 1000;
    if (units[whole] < per) return 0;
    return per == 0 ? cap : static_cast<int>(std::min<int64_t>(cap, units[whole] / per));
  }
  scratch_.assign(units, units + width_);
  return take_runs(i, k, scratch_.data(), cap, seated(i, k) ? seats_of(i, k) : 0, [](const Shape&, int64_t n) { return n; });
}

void Plan::release_last(size_t i) {
  Decision& d = decisions_[i];
  if (const size_t pick = shrink_pick(i); pick + 1 < d.placement.size()) std::swap(d.placement[pick], d.placement.back());
  give(i, d.placement.back());
  d.placement.pop_back();
  d.workers = static_cast<int>(d.placement.size());
}

int64_t Plan::seat_devices(size_t i, size_t k, int64_t seats) const {
  const Task& t = tasks_[i];
  const int64_t per_device = gpu::seats_per_device(t.gpu_milli);
  auto held = t.shared_devices.find(nodes_[k]->name);
  return std::max<int64_t>(0, (seats + per_device - 1) / per_device - (held == t.shared_devices.end() ? 0 : held->second));
}

std::optional<Plan::Shape> Plan::next_shape(size_t i, size_t k, const int64_t* units, int64_t seats) const {
  if (shares_on(i, k)) return units[info_[k].replicas] >= 1 ? std::optional<Shape>(Shape{info_[k].replicas, 1}) : std::nullopt;
  if (!seated(i, k)) return shape_on(tasks_[i].gpu_milli, k, units);
  const int whole = info_[k].whole;
  const int64_t opens = seat_devices(i, k, seats + 1) - seat_devices(i, k, seats);
  if (units[whole] < opens) return std::nullopt;
  return Shape{whole, opens};
}

void Plan::change(size_t i, const Task::Worker& w, int sign) {
  const size_t k = node_at(w.node);
  if (k == kNoNode) return;
  if (sign < 0 && bought(k) && !opened_[k]) {
    // Opened for good in this plan: a node bought for a gang stays bought for whoever takes it.
    opened_[k] = 1;
    if (auto left = pool_left_.find(nodes_[k]->bought_from); left != pool_left_.end())
      for (const auto& [r, units] : nodes_[k]->pool_cost) left->second[r] -= units;
  }
  if (seated(i, k)) {
    // A seat opens or closes a device by how many of the task's workers sit here, whichever
    // worker comes or goes.
    int64_t& seats = seats_[{i, k}];
    const int64_t after = std::max<int64_t>(0, seats - sign);
    row(k)[info_[k].whole] -= seat_devices(i, k, after) - seat_devices(i, k, seats);
    seats = after;
  } else {
    row(k)[resource_id(w.gpu_resource)] += sign * w.count;
  }
  if (info_[k].replicas >= 0 && !tasks_[i].sharing_profile.empty() && resource_id(w.gpu_resource) == info_[k].replicas) {
    int64_t& held = sharers_[k][i];
    held -= sign * w.count;
    if (held <= 0) sharers_[k].erase(i);
  }
  move_room(i, row(k), sign);
  if (bought_up(k)) note_life(i, k, sign);
  if (quota_.enabled() && info_[k].whole >= 0) {
    const int64_t milli = seated(i, k) ? gpu::seat_milli(tasks_[i].gpu_milli) : gpu::share_milli(w.gpu_resource, w.count);
    if (sign < 0)
      quota_.add(tasks_[i].tenant, info_[k].pool, milli);
    else
      quota_.remove(tasks_[i].tenant, info_[k].pool, milli);
  }
}

std::optional<double> Plan::shared_rate_on(size_t i, size_t k) const {
  const Task& t = tasks_[i];
  const NodeInfo& info = info_[k];
  if (!may_share_[i] || info.replicas < 0 || info.per_gpu != 2) return std::nullopt;
  std::vector<std::string> others;
  int64_t by_sharers = 0;
  for (const auto& [j, held] : sharers_[k]) {
    by_sharers += held;
    if (j != i) others.push_back(tasks_[j].sharing_profile);
  }
  const auto cap = nodes_[k]->capacity.find(names_[info.replicas]);
  const int64_t held = (cap == nodes_[k]->capacity.end() ? 0 : cap->second) - row(k)[info.replicas];
  if (held > by_sharers) return std::nullopt;
  return shared_rate(*config_.pair_rates, t.sharing_profile, others);
}

int64_t Plan::work_price_on(size_t i, size_t k, std::optional<int64_t> price) const {
  const int64_t gpu_hour = price.value_or(info_[k].price);
  const auto rate = shared_rate_on(i, k);
  if (!rate || *rate <= 0) return gpu_hour;
  return std::llround(static_cast<double>(gpu_hour) / info_[k].per_gpu / *rate);  // its replica's share, over its rate there
}

// Both over the workers on nodes the plan has (a kept worker's node may still be being bought).
int64_t Plan::work_price(size_t i, const std::vector<Task::Worker>& placed) const {
  int64_t sum = 0, known = 0;
  for (const auto& w : placed) {
    const size_t k = node_at(w.node);
    if (k == kNoNode) continue;
    const bool shared = info_[k].replicas >= 0 && resource_id(w.gpu_resource) == info_[k].replicas;
    sum += shared ? work_price_on(i, k) : info_[k].price;
    ++known;
  }
  return known == 0 ? 0 : sum / known;
}

int64_t Plan::mean_price(const std::vector<Task::Worker>& placed) const {
  int64_t sum = 0, known = 0;
  for (const auto& w : placed) {
    const size_t k = node_at(w.node);
    if (k == kNoNode) continue;
    sum += info_[k].price;
    ++known;
  }
  return known == 0 ? 0 : sum / known;
}

// Free whole-GPU-equivalents as a share of all GPUs, now (after what this plan already placed).
int Plan::idle_percent() const {
  int64_t total = 0, free = 0;
  for (size_t k = 0; k < nodes_.size(); ++k) {
    const Node* n = nodes_[k];
    if (n->vendor.empty() || !n->schedulable) continue;
    for (const auto& [r, units] : n->capacity) {
      total += gpu::share_milli(r, units);
      free += gpu::share_milli(r, std::max<int64_t>(0, row(k)[resource_id(r)]));
    }
  }
  return total <= 0 ? 0 : static_cast<int>(free * 100 / total);
}

std::string Plan::insufficient(size_t i, int need) {
  const Task& t = tasks_[i];
  int64_t free_gpus = 0, to_buy = 0;
  for (size_t k = 0; k < nodes_.size(); ++k) {
    const Node* n = nodes_[k];
    if (!may_place(i, k) || n->vendor.empty() || !runs_on(t, n->vendor)) continue;
    if (!bought(k)) free_gpus += std::max<int64_t>(0, row(k)[info_[k].whole]);
    else if (openable(k, {}, true)) to_buy += std::max<int64_t>(0, row(k)[info_[k].whole]);
  }
  int per = whole_gpus(t.gpu_milli);
  return "InsufficientCapacity: needs " + std::to_string(need * per) + " GPUs (" + std::to_string(need) +
         " workers x " + (t.gpu_milli % 1000 ? std::to_string(t.gpu_milli / 1000.0).substr(0, 5) : std::to_string(per)) +
         "), " + std::to_string(free_gpus) + " free" + (to_buy > 0 ? " and more on nodes NodePools may still buy" : "") +
         tenant_entitlement(i) +
         (t.topology && t.topology->required && level_index(t.topology->level) != std::string::npos
              ? "; topology: all in one " + t.topology->level + " (required), and no " + t.topology->level + " has room for them"
              : "");
}

// "; tenant lab: unused nominal 10.8 on nvidia/on-demand and 5.4 on nvidia/spot; fair share 30
// GPUs, holds 24": what a waiting gang's tenant could claim back (empty without tenants).
std::string Plan::tenant_entitlement(size_t i) {
  const Task& t = tasks_[i];
  if (!quota_.enabled() || t.tenant.empty()) return "";
  std::string nominal;
  for (const auto& [pool, milli] : unused_nominal(i))
    if (milli > 0) nominal += (nominal.empty() ? "" : " and ") + api::format_milli(milli) + " on " + pool;
  return "; tenant " + t.tenant + ": " + (nominal.empty() ? "no unused nominal where it may run" : "unused nominal " + nominal) +
         "; fair share " + api::format_milli(fair_of(t.tenant)) + " GPUs, holds " + api::format_milli(quota_.total_usage(t.tenant));
}

std::string amount(int column, int64_t units) {
  char buf[64];
  switch (column) {
    case 0:
      if (units % 1000 == 0) std::snprintf(buf, sizeof buf, "%lld CPUs", static_cast<long long>(units / 1000));
      else std::snprintf(buf, sizeof buf, "%.3g CPUs", static_cast<double>(units) / 1000);
      return buf;
    case 1:
    case 2:
      std::snprintf(buf, sizeof buf, "%.4gGi of %s", static_cast<double>(units) / (1024.0 * 1024 * 1024), column == 1 ? "memory" : "ephemeral storage");
      return buf;
    default:
      return std::to_string(units) + " pods";
  }
}

std::string Plan::devices_unplaceable(const Task& t) const {
  std::set<std::string> classes, vendors, seen;
  bool matching = false;
  for (const Node* n : nodes_) {
    if (n->dra_class.empty()) continue;
    classes.insert(n->dra_class);
    if (n->dra_class != t.device_class) continue;
    vendors.insert(n->vendor);
    if (!devices_match(t, *n)) {
      for (const auto& [name, value] : t.device_attributes) {
        auto it = n->dra_attributes.find(qualified_attribute(*n, name));
        seen.insert(name + "=" + (it == n->dra_attributes.end() ? "(none)" : it->second));
      }
      continue;
    }
    if (runs_on(t, n->vendor)) matching = true;
  }
  auto listed = [](const std::set<std::string>& items) {
    std::string out;
    for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
    return out.empty() ? "none" : out;
  };
  if (vendors.empty())
    return "Unplaceable: no node publishes DRA devices of class " + t.device_class + " (classes published: " + listed(classes) + ")";
  if (matching) return "Unplaceable: no node with the devices it asks for matches its workers' nodeSelector and required node affinity";
  bool vendor_listed = false;
  for (const auto& v : vendors) vendor_listed = vendor_listed || runs_on(t, v);
  if (!vendor_listed) return "Unplaceable: class " + t.device_class + " holds " + listed(vendors) + " GPUs, which spec.vendors does not list";
  std::string asked;
  for (const auto& [name, value] : t.device_attributes) asked += (asked.empty() ? "" : ", ") + name + "=" + value;
  return "Unplaceable: no device of class " + t.device_class + " has " + asked + " (its nodes' devices have " + listed(seen) + ")";
}

int64_t Plan::node_whole_gpus(size_t k) const {
  int64_t gpus = row(k)[info_[k].whole];
  if (auto cap = nodes_[k]->capacity.find(names_[info_[k].whole]); cap != nodes_[k]->capacity.end()) gpus = std::max(gpus, cap->second);
  return gpus;
}

bool Plan::fills_less(size_t i, size_t k, int workers) const {
  const Task& t = tasks_[i];
  if (info_[k].whole < 0 || t.gpu_milli <= 0 || t.gpu_milli % 1000 != 0) return false;
  const int64_t gpus = node_whole_gpus(k);
  if (row(k)[info_[k].whole] < gpus) return false;  // someone holds GPUs there: it is bought anyway
  return int64_t{workers} * (t.gpu_milli / 1000) < gpus;
}

bool Plan::openable(size_t k, const std::map<std::string, std::map<std::string, int64_t>>& opening, bool may_buy) const {
  if (!bought(k) || opened_[k]) return true;
  if (!may_buy) return false;
  const Node* n = nodes_[k];
  auto left = pool_left_.find(n->bought_from);
  if (left == pool_left_.end()) return true;
  auto gang = opening.find(n->bought_from);
  for (const auto& [r, units] : n->pool_cost) {
    auto l = left->second.find(r);
    if (l == left->second.end()) continue;
    int64_t taken = 0;
    if (gang != opening.end())
      if (auto g = gang->second.find(r); g != gang->second.end()) taken = g->second;
    if (l->second - taken < units) return false;
  }
  return true;
}

std::string Plan::beyond_pools(size_t i, int need) {
  const Task& t = tasks_[i];
  if (config_.pool_budgets.empty() || t.gpu_milli % 1000 != 0) return "";
  const int64_t per = std::max<int64_t>(1, t.gpu_milli / 1000);
  int64_t up = 0;
  std::map<std::string, std::vector<size_t>> by_pool;  // NodePool -> its nodes to buy that t may use
  for (size_t k = 0; k < nodes_.size(); ++k) {
    if (info_[k].whole < 0 || !runs_on(t, nodes_[k]->vendor) || !may_place(i, k)) continue;
    if (bought(k)) by_pool[nodes_[k]->bought_from].push_back(k);
    else up += node_whole_gpus(k) / per;
  }
  if (by_pool.empty()) return "";
  int64_t buyable = 0;
  std::string limits;
  for (auto& [pool, ks] : by_pool) {
    // The largest nodes first, while the pool's limits allow another.
    std::sort(ks.begin(), ks.end(), [&](size_t a, size_t b) { return node_whole_gpus(a) > node_whole_gpus(b); });
    auto budget_it = config_.pool_budgets.find(pool);
    std::map<std::string, int64_t> left = budget_it == config_.pool_budgets.end() ? std::map<std::string, int64_t>{} : budget_it->second;
    for (size_t k : ks) {
      const auto& cost = nodes_[k]->pool_cost;
      if (std::any_of(cost.begin(), cost.end(), [&](const auto& c) { return left.count(c.first) && left[c.first] < c.second; })) continue;
      for (const auto& [r, units] : cost)
        if (left.count(r)) left[r] -= units;
      buyable += node_whole_gpus(k) / per;
    }
    if (budget_it != config_.pool_budgets.end())
      for (const auto& [r, l] : budget_it->second) limits += (limits.empty() ? "" : ", ") + pool + " " + std::to_string(l) + " " + r;
  }
  if (up + buyable >= need) return "";
  return "Unplaceable: needs " + std::to_string(need) + " workers of " + std::to_string(per) + " GPUs at once; the nodes it may use hold " +
         std::to_string(up) + " and its NodePools' limits let " + std::to_string(buyable) + " more be bought (left to buy: " + limits + ")";
}

std::string Plan::unplaceable(size_t i) {
  const Task& t = tasks_[i];
  const auto& demand = demand_[i];
  const bool selective = !t.node_selector.empty() || !t.node_terms.empty() || !t.device_class.empty();
  const bool off_spot = kept_off_spot(t, config_);
  // Tasks that select no nodes themselves share the answer with every task of the same shape.
  std::string shape_key;
  if (!selective) {
    shape_key = std::to_string(t.gpu_milli) + (off_spot ? "s" : "-") + (may_share_[i] ? "h" : "-");
    for (const auto& v : t.vendors) shape_key += "/" + v;
    for (int64_t d : demand) shape_key += "/" + std::to_string(d);
    if (auto it = unplaceable_.find(shape_key); it != unplaceable_.end()) return it->second;
  }
  const auto vendors = gang_vendors(t);
  const int64_t per_worker = t.gpu_milli % 1000 == 0 ? t.gpu_milli / 1000 : 1;
  std::array<int64_t, kRoomColumns> most{};
  int64_t most_gpus = 0;
  bool any_node = false, one_holds = false;
  for (size_t k = 0; k < nodes_.size() && !one_holds; ++k) {
    const Node* n = nodes_[k];
    if (info_[k].whole < 0 || std::find(vendors.begin(), vendors.end(), n->vendor) == vendors.end()) continue;
    if ((off_spot && info_[k].spot) || !selects(t, *n)) continue;
    any_node = true;
    bool holds = true;
    for (int c = 0; c < kRoomColumns; ++c) {
      auto cap = n->room_capacity.find(kRoomResources[c]);
      const int64_t have = cap == n->room_capacity.end() ? kUnlimitedRoom : cap->second;
      most[c] = std::max(most[c], have);
      holds = holds && have >= demand[c];
    }
    int64_t gpus = node_whole_gpus(k);
    // A fraction fits any GPU node (a slice, a replica); a task that may share, half a GPU split two ways.
    if (t.gpu_milli % 1000 != 0 || (may_share_[i] && info_[k].replicas >= 0 && info_[k].per_gpu == 2)) gpus = std::max<int64_t>(gpus, 1);
    most_gpus = std::max(most_gpus, gpus);
    one_holds = holds && gpus >= per_worker;
  }
  std::string why;
  if (!one_holds && any_node) {
    for (int c = 0; c < kRoomColumns && why.empty(); ++c)
      if (demand[c] > most[c]) {
        const std::string has = amount(c, most[c]);
        why = "Unplaceable: needs " + amount(c, demand[c]) + " per worker; the largest node it may use has " + has.substr(0, has.find(' '));
      }
    if (why.empty() && per_worker > most_gpus)
      why = "Unplaceable: needs " + std::to_string(per_worker) + " GPUs per worker; the largest node it may use has " + std::to_string(most_gpus);
    if (why.empty()) why = "Unplaceable: no node it may use has the GPUs, CPU, memory and storage one worker asks for at once";
  } else if (!any_node && !selective) {
    // Without GPU nodes of its vendors at all (a cluster still starting) it simply waits.
  } else if (!any_node && !t.device_class.empty()) {
    why = devices_unplaceable(t);
  } else if (!any_node) {
    why = "Unplaceable: no GPU node matches its workers' nodeSelector and required node affinity";
  }
  if (!selective) unplaceable_[shape_key] = why;
  return why;
}

const Tenant* Plan::tenant_of_name(const std::string& name) const {
  auto it = config_.tenants.find(name);
  return it == config_.tenants.end() ? nullptr : &it->second;
}

std::string Plan::money(int64_t micros) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", static_cast<double>(micros) / 1e6);
  return buf;
}

std::vector<std::string> Plan::gang_vendors(const Task& t) {
  return t.vendors;
}

}  // namespace valley::planner::detail
