// One plan's gang placement on one vendor's nodes, scored by price or by packing.
#include "controllers/planner/plan.h"

#include <algorithm>
#include <array>
#include <set>

namespace valley::planner::detail {

namespace {

// What placing a task's workers on one node would be, each term signed so that more is better.
struct NodeTerms {
  int64_t alone = 0;             // -1: a GPU shared by a task that is not reduceCost
  int64_t up_first = 0;          // -1: still to be bought, for a task that does not wait for it
  int64_t waste = 0;             // minus the GPU thousandths taken beyond what the task uses
  int64_t own = 0;               // 1: one of the task's own nodes
  int64_t cheaper_work = 0;      // minus the price of the task's work here
  int64_t cheaper_node = 0;      // minus the node's price
  int64_t up = 0;                // -1: still to be bought
  int64_t class_suits = 0;       // 1: spot for a task that checkpoints, on-demand for one that does not
  int64_t fit = 0;               // workers that fit here
  int64_t shared = 0;            // topology levels shared with the gang's first node
  int64_t shorter_life = 0;      // minus the minutes the task keeps a bought node up beyond its tasks
  int64_t tighter = 0;           // minus the GPU units left
};

using Ranking = std::array<int64_t, 12>;

// The order a placement weighs the terms in, compared lexicographically. By price: a whole GPU
// before a shared one for a task that is not reduceCost, least GPU wasted (a MIG slice over a
// whole GPU for a fraction), the task's own nodes, the lowest price of its work now (half a shared
// GPU over the rate it keeps beside its partner), the capacity class that suits it, most workers
// here (fewest nodes), the most topology levels shared with the gang's first node, on a bought
// node the least time it keeps the node up beyond the tasks there, the tightest fit. Packing first
// (before price-first placement): most workers here, least waste, own nodes, the capacity class
// that suits the task, the lowest price, shared levels, the tightest fit.
Ranking ranking(Placement placement, const NodeTerms& n) {
  switch (placement) {
    case Placement::Price:
      return {n.alone, n.up_first, n.waste, n.own, n.cheaper_work, n.up, n.class_suits, n.fit, n.shared, n.shorter_life, n.tighter, 0};
    case Placement::PackThenClass:
      return {n.up_first, n.fit, n.waste, n.own, n.class_suits, n.cheaper_node, n.up, n.shared, n.tighter, 0, 0, 0};
    case Placement::Pack:
      return {n.up_first, n.fit, n.waste, n.own, n.up, n.shared, n.tighter, 0, 0, 0, 0, 0};
  }
  return {};
}

}  // namespace

// Places `count` workers of task i as a gang on one vendor's nodes; commits to free_ on success.
// By price: every allowed vendor is tried and the cheaper gang wins. Packing (the peers' way): the
// first vendor in a fixed order that fits.
std::optional<std::vector<Task::Worker>> Plan::place(size_t i, int count, const std::vector<Task::Worker>& prefer,
                                                       const PlaceOptions& options) {
  const Task& t = tasks_[i];
  if (count <= 0) return std::vector<Task::Worker>{};
  const bool by_price = config_.placement == Placement::Price;
  std::vector<std::string> vendors;
  std::string used_vendor;
  for (const auto& w : prefer)
    if (const size_t k = node_at(w.node); k != kNoNode) used_vendor = nodes_[k]->vendor;
  if (!used_vendor.empty()) {
    vendors.push_back(used_vendor);  // a gang stays on one vendor
  } else if (runs_on(t, "amd") && t.reduce_cost && config_.amd_cheaper && !by_price) {
    vendors = gang_vendors(t);
    std::stable_partition(vendors.begin(), vendors.end(), [](const std::string& v) { return v == "amd"; });
  } else {
    vendors = gang_vendors(t);
  }
  std::vector<size_t> preferred;
  for (const auto& w : prefer)
    if (const size_t k = node_at(w.node); k != kNoNode) preferred.push_back(k);
  std::optional<std::vector<Task::Worker>> chosen;
  std::pair<bool, int64_t> chosen_price{};
  for (const auto& vendor : vendors) {
    auto gang = place_in_domain(i, vendor, count, preferred, options);
    if (!gang) continue;
    // A gang that need not wait for nodes to be bought first, unless the task is reduceCost; then
    // the lower price per hour of its work (a shared GPU's over its rate there).
    const bool buys = !t.reduce_cost && config_.up_before_bought && std::any_of(gang->begin(), gang->end(), [&](const Task::Worker& w) {
      const size_t k = node_at(w.node);
      return k != kNoNode && bought(k);
    });
    const std::pair<bool, int64_t> price{buys, by_price ? work_price(i, *gang) : 0};
    if (!chosen || price < chosen_price) {
      chosen = std::move(gang);
      chosen_price = price;
    }
    if (!by_price) break;
  }
  if (!chosen) return std::nullopt;
  for (const auto& w : *chosen) take(i, w);
  return chosen;
}

// One vendor's gang (not yet committed to free_): greedily, the best-scoring node takes what fits
// there, until the gang is placed.
std::optional<std::vector<Task::Worker>> Plan::place_on(size_t i, const std::string& vendor, int count, const std::vector<size_t>& preferred,
                                                          const PlaceOptions& options) {
  const Task& t = tasks_[i];
  // The candidates, in name order: what this gang has claimed on each so far is kept apart from
  // free_ (cheaper than copying the whole table for each try).
  std::vector<size_t> candidates;
  std::vector<std::pair<size_t, std::vector<int64_t>>> claimed;  // nodes this gang took from: what is left there
  auto left_on = [&](size_t k) -> const int64_t* {
    for (const auto& [node, left] : claimed)
      if (node == k) return left.data();
    return row(k);
  };
  int64_t fit_alone = 0;  // what fits on the candidates one by one: the gang cannot exceed it
  const bool by_price = config_.placement == Placement::Price;
  const auto of_vendor = std::find(vendors_.begin(), vendors_.end(), vendor);
  if (of_vendor == vendors_.end()) return std::nullopt;  // no node of this vendor
  const int wanted = static_cast<int>(of_vendor - vendors_.begin());
  for (size_t k = 0; k < nodes_.size(); ++k) {
    if (info_[k].vendor != wanted || !may_place(i, k) || (options.spot_only && !info_[k].spot)) continue;
    if (options.only && !(*options.only)[k]) continue;
    if (options.price_cap && info_[k].price > *options.price_cap) continue;
    if (!openable(k, {}, options.may_buy)) continue;
    if (options.fill_workers > 0 && bought(k) && fills_less(i, k, options.fill_workers)) continue;
    const int f = fits(i, k, row(k), count);
    if (f == 0) continue;
    fit_alone += f;
    candidates.push_back(k);
  }
  if (fit_alone < count) return std::nullopt;
  std::vector<Task::Worker> out;
  std::map<std::string, int64_t> quota_taken;  // pool -> thousandths this gang has claimed
  std::map<std::string, std::map<std::string, int64_t>> opening;  // NodePool -> resource -> what this gang's new nodes cost
  std::map<size_t, int64_t> gang_seats;          // seats node -> this gang's workers there so far
  auto seated_before = [&](size_t k) -> int64_t {
    if (!seated(i, k)) return 0;
    auto it = gang_seats.find(k);
    return seats_of(i, k) + (it == gang_seats.end() ? 0 : it->second);
  };
  int remaining = count;
  while (remaining > 0) {
    size_t best = kNoNode;
    // The node that ranks highest (ranking) takes as many as fit.
    const size_t anchor = !claimed.empty() ? claimed.front().first : !preferred.empty() ? preferred.front() : kNoNode;
    Ranking best_rank{};
    int best_fit = 0;
    std::vector<int64_t> node_free;
    for (const size_t k : candidates) {
      const Node* n = nodes_[k];
      const bool claimed_here = std::any_of(claimed.begin(), claimed.end(), [k](const auto& c) { return c.first == k; });
      if (!claimed_here && !openable(k, opening, options.may_buy)) continue;
      const int64_t* units = left_on(k);
      // The tenant's quota in this node's pool bounds the workers too.
      const std::string* pool = quota_.enabled() ? &info_[k].pool : nullptr;
      const int64_t quota_left = pool ? quota_.room(t.tenant, *pool) - quota_taken[*pool] : 0;
      int fit = 0;
      int64_t share = 0;  // thousandths of a GPU taken from the node
      int64_t left = 0;   // GPU units left (the room columns say nothing of fit)
      auto within_quota = [&, taken = int64_t{0}](const Shape& s, int64_t most) mutable {
        const int64_t one = quota_share(i, k, s);
        int64_t run = most;
        if (pool) run = quota_left - taken < 0 ? 0 : one > 0 ? std::min(most, (quota_left - taken) / one) : most;
        share += run * node_share(i, k, s);
        taken += run * one;
        return run;
      };
      const bool shares = shares_on(i, k);
      if (t.gpu_milli % 1000 == 0 && !shares) {
        // Whole GPUs: one shape for every worker, so no what-if row is needed.
        fit = static_cast<int>(within_quota(Shape{info_[k].whole, t.gpu_milli / 1000}, fits(i, k, units, remaining)));
        for (size_t r = kRoomColumns; r < width_; ++r) left += units[r];
        left -= int64_t{fit} * (t.gpu_milli / 1000);
      } else {
        node_free.assign(units, units + width_);
        fit = take_runs(i, k, node_free.data(), remaining, seated_before(k), within_quota);
        for (size_t r = kRoomColumns; r < width_; ++r) left += node_free[r];
      }
      if (fit == 0) continue;
      NodeTerms terms;
      // A task that is not reduceCost shares a GPU only where no whole one is free for it (sharing
      // slows it down); a reduceCost one wherever its work is cheaper.
      terms.alone = shares && !t.reduce_cost ? -1 : 0;
      // A node that is up before one still to be bought: for a task that is not reduceCost first
      // (it does not wait when it need not), for a reduceCost one among equal prices.
      terms.up = bought(k) ? -1 : 0;
      terms.up_first = t.reduce_cost || !config_.up_before_bought ? 0 : terms.up;
      terms.waste = -(share - int64_t{fit} * (shares ? share : t.gpu_milli));
      terms.own = std::find(preferred.begin(), preferred.end(), k) != preferred.end();
      terms.cheaper_work = by_price ? -work_price_on(i, k) : 0;
      terms.cheaper_node = -n->price_micros;
      terms.class_suits = info_[k].spot == t.checkpointed;
      terms.fit = fit;
      terms.shared = anchor == kNoNode ? 0 : shared_levels(k, anchor);
      terms.shorter_life = by_price ? -extension_minutes(i, k) : 0;
      terms.tighter = -left;
      const Ranking rank = ranking(config_.placement, terms);
      if (best == kNoNode || rank > best_rank) {
        best = k;
        best_rank = rank;
        best_fit = fit;
      }
    }
    if (best == kNoNode) return std::nullopt;
    auto mine = std::find_if(claimed.begin(), claimed.end(), [best](const auto& c) { return c.first == best; });
    if (mine == claimed.end()) {
      mine = claimed.insert(mine, {best, std::vector<int64_t>(row(best), row(best) + width_)});
      if (bought(best) && !opened_[best])
        for (const auto& [r, units] : nodes_[best]->pool_cost) opening[nodes_[best]->bought_from][r] += units;
    }
    int64_t* left = mine->second.data();
    const int64_t seats = seated_before(best);
    for (int w = 0; w < best_fit; ++w) {
      const Shape s = *next_shape(i, best, left, seats + w);
      left[s.resource] -= s.count;
      move_room(i, left, -1);
      quota_taken[info_[best].pool] += quota_share(i, best, s);
      out.push_back(placed_worker(i, best, s));
    }
    if (seated(i, best)) gang_seats[best] += best_fit;
    remaining -= best_fit;
  }
  return out;
}

std::optional<std::vector<Task::Worker>> Plan::place_in_domain(size_t i, const std::string& vendor, int count,
                                                                  const std::vector<size_t>& preferred, const PlaceOptions& options) {
  const Task& t = tasks_[i];
  const size_t level = t.topology ? level_index(t.topology->level) : std::string::npos;
  if (level == std::string::npos) return place_on(i, vendor, count, preferred, options);
  std::map<std::string, std::vector<char>> domains;  // domain -> its nodes, by index
  for (size_t k = 0; k < nodes_.size(); ++k) {
    const std::string& d = domain_of(k, level);
    if (d.empty() || nodes_[k]->vendor != vendor) continue;
    auto& mask = domains[d];
    if (mask.empty()) mask.assign(nodes_.size(), 0);
    mask[k] = 1;
  }
  auto in = [&](const std::vector<char>& mask) {
    PlaceOptions within = options;
    within.only = &mask;
    return place_on(i, vendor, count, preferred, within);
  };
  // A task with workers grows, or replaces lost ones, in its own domain first.
  std::string own;
  for (size_t k : preferred)
    if (own.empty()) own = domain_of(k, level);
  if (!own.empty() && domains.count(own))
    if (auto gang = in(domains[own])) return gang;
  if (!own.empty() && t.topology->required) return std::nullopt;  // a gang never leaves its domain
  std::optional<std::vector<Task::Worker>> best;
  int64_t best_price = 0;
  size_t best_nodes = 0;
  for (const auto& [domain, mask] : domains) {
    auto gang = in(mask);
    if (!gang) continue;
    const int64_t price = mean_price(*gang);
    const size_t nodes = node_count(*gang);
    if (!best || price < best_price || (price == best_price && nodes < best_nodes)) {
      best = std::move(gang);
      best_price = price;
      best_nodes = nodes;
    }
    if (config_.placement != Placement::Price) break;  // packing: the first domain that holds it
  }
  if (t.topology->required) return best;
  // Preferred: one domain, unless that takes more nodes (or more money) than spreading wider. A
  // node boundary costs a gang more than a domain boundary above it.
  auto wider = place_on(i, vendor, count, preferred, options);
  if (!best) return wider;
  if (wider) {
    const int64_t price = mean_price(*wider);
    if (price < best_price || (price == best_price && node_count(*wider) < best_nodes)) return wider;
  }
  return best;
}

const std::string& Plan::domain_of(size_t k, size_t level) const {
  static const std::string kNone;
  const auto& labels = nodes_[k]->labels;
  auto it = labels.find(config_.topology[level].label);
  return it == labels.end() ? kNone : it->second;
}

int64_t Plan::shared_levels(size_t a, size_t b) const {
  int64_t shared = 0;
  for (size_t level = 0; level < config_.topology.size(); ++level) {
    const std::string& d = domain_of(a, level);
    if (!d.empty() && d == domain_of(b, level)) ++shared;
  }
  return shared;
}

std::string Plan::topology_unplaceable(size_t i, int need) const {
  const Task& t = tasks_[i];
  if (!t.topology) return "";
  const size_t level = level_index(t.topology->level);
  if (level == std::string::npos) {
    std::string known;
    for (const auto& l : config_.topology) known += (known.empty() ? "" : ", ") + l.name;
    return "Unplaceable: spec.topology names the level \"" + t.topology->level + "\", which the operator does not declare (" +
           (known.empty() ? std::string("it declares none") : "its levels: " + known) + ")";
  }
  if (!t.topology->required || t.gpu_milli % 1000 != 0) return "";
  // What each domain holds of this gang when empty: whole GPUs by node, worker by worker.
  const int64_t per = std::max<int64_t>(1, t.gpu_milli / 1000);
  const auto vendors = gang_vendors(t);
  std::map<std::string, int64_t> holds;  // domain -> workers
  for (size_t k = 0; k < nodes_.size(); ++k) {
    const Node* n = nodes_[k];
    const std::string& d = domain_of(k, level);
    if (d.empty() || info_[k].whole < 0 || std::find(vendors.begin(), vendors.end(), n->vendor) == vendors.end()) continue;
    if ((kept_off_spot(t, config_) && info_[k].spot) || !selects(t, *n)) continue;
    holds[d] += node_whole_gpus(k) / per;
  }
  std::string largest;
  int64_t most = 0;
  for (const auto& [d, w] : holds)
    if (w > most) most = w, largest = d;
  if (most >= need || holds.empty()) return "";  // no labelled node yet: it waits as any task does
  return "Unplaceable: needs " + std::to_string(need) + " workers in one " + t.topology->level + " (spec.topology.required); the largest " +
         t.topology->level + " it may use, " + largest + ", holds " + std::to_string(most);
}

size_t Plan::node_count(const std::vector<Task::Worker>& placed) {
  std::set<std::string> nodes;
  for (const auto& w : placed) nodes.insert(w.node);
  return nodes.size();
}

size_t Plan::shrink_pick(size_t i) const {
  const auto& placement = decisions_[i].placement;
  if (placement.empty()) return 0;
  if (config_.topology.empty() || tasks_[i].hot_elastic || kept_index_.count(i) || placement.size() < 2) return placement.size() - 1;
  // Gang-mates by domain at each level, widest first; the node last.
  const size_t levels = config_.topology.size();
  std::vector<std::map<std::string, int>> mates(levels + 1);
  std::vector<std::vector<std::string>> where(placement.size(), std::vector<std::string>(levels + 1));
  for (size_t x = 0; x < placement.size(); ++x) {
    const size_t k = node_at(placement[x].node);
    for (size_t l = 0; l < levels; ++l) where[x][l] = k == kNoNode ? "" : domain_of(k, levels - 1 - l);
    where[x][levels] = placement[x].node;
    for (size_t l = 0; l <= levels; ++l) ++mates[l][where[x][l]];
  }
  auto score = [&](size_t x) {
    std::vector<int> s;
    for (size_t l = 0; l <= levels; ++l) s.push_back(mates[l][where[x][l]]);
    return s;
  };
  size_t pick = placement.size() - 1;
  auto best = score(pick);
  for (size_t x = placement.size() - 1; x-- > 0;)
    if (auto s = score(x); s < best) best = std::move(s), pick = x;
  return pick;
}

size_t Plan::level_index(const std::string& name) const {
  for (size_t level = 0; level < config_.topology.size(); ++level)
    if (config_.topology[level].name == name) return level;
  return std::string::npos;
}

}  // namespace valley::planner::detail
