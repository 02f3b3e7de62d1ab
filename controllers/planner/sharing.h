// Two tasks' workers on one GPU: the GPU split in two replicas (NVIDIA time-slicing or MPS with
// nvidia.com/gpu.replicas=2), one task on each. Each is charged half the GPU, so sharing makes a
// task cheaper per unit of work exactly when it does more than half its work alone beside the
// other; it pays the pair when that holds for both. What each does beside the other comes from
// measured pair rates (a PricingPolicy's spec.sharing.pairs, e.g. Gavel's profiles), by workload
// profile; a pair nobody measured never shares. Pure.
//
// The device plugin, not Valley, picks which replica (so which partner) a pod gets on a node, so a
// task joins a node's shared GPUs only if it pairs with every task already on them.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace valley::planner {

class PairRates {
 public:
  // a's rate beside b, and b's beside a, as fractions of each one's rate alone (0..1 or a little
  // above: some pairs overlap perfectly).
  void set(const std::string& a, const std::string& b, double a_beside_b, double b_beside_a);
  // `profile`'s rate beside `other`, as a fraction of its rate alone; nullopt: not measured.
  std::optional<double> beside(const std::string& profile, const std::string& other) const;
  // The lowest rate `profile` has beside any partner with whom the pair pays; nullopt: none pays.
  std::optional<double> worst_paying(const std::string& profile) const;
  bool empty() const { return rates_.empty(); }
  bool operator==(const PairRates&) const = default;

 private:
  std::map<std::pair<std::string, std::string>, double> rates_;
};

// Whether a and b each do more than half their work alone beside the other.
bool pair_pays(const PairRates& rates, const std::string& a, const std::string& b);

// What a task of `profile` does on a node's shared GPUs whose replicas hold tasks of `others`
// (their profiles): nullopt if it may not join (a pair that does not pay, or an occupant of unknown
// profile); else the fraction of its rate alone it can count on: the worst pair it may land in, or
// with nobody there yet the worst pair that pays for it (whoever joins later must pay too).
std::optional<double> shared_rate(const PairRates& rates, const std::string& profile, const std::vector<std::string>& others);

}  // namespace valley::planner
