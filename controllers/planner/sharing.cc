#include "controllers/planner/sharing.h"

#include <algorithm>

namespace valley::planner {

void PairRates::set(const std::string& a, const std::string& b, double a_beside_b, double b_beside_a) {
  rates_[{a, b}] = a_beside_b;
  rates_[{b, a}] = b_beside_a;
}

std::optional<double> PairRates::beside(const std::string& profile, const std::string& other) const {
  auto it = rates_.find({profile, other});
  if (it == rates_.end()) return std::nullopt;
  return it->second;
}

bool pair_pays(const PairRates& rates, const std::string& a, const std::string& b) {
  const auto ab = rates.beside(a, b), ba = rates.beside(b, a);
  return ab && ba && *ab > 0.5 && *ba > 0.5;
}

std::optional<double> PairRates::worst_paying(const std::string& profile) const {
  std::optional<double> worst;
  for (auto it = rates_.lower_bound({profile, ""}); it != rates_.end() && it->first.first == profile; ++it)
    if (pair_pays(*this, profile, it->first.second)) worst = worst ? std::min(*worst, it->second) : it->second;
  return worst;
}

std::optional<double> shared_rate(const PairRates& rates, const std::string& profile, const std::vector<std::string>& others) {
  if (profile.empty()) return std::nullopt;
  if (others.empty()) return rates.worst_paying(profile);
  std::optional<double> worst;
  for (const auto& other : others) {
    if (other.empty() || !pair_pays(rates, profile, other)) return std::nullopt;
    const double r = *rates.beside(profile, other);
    worst = worst ? std::min(*worst, r) : r;
  }
  return worst;
}

}  // namespace valley::planner
