#include "controllers/planner/fair_share.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

namespace valley::planner {

std::map<std::string, int64_t> fair_shares(int64_t capacity, const std::map<std::string, FairShareClaim>& claims) {
  std::map<std::string, double> fair;
  std::set<std::string> open;
  for (const auto& [name, c] : claims) {
    fair[name] = 0;
    if (c.demand > 0) open.insert(name);
  }
  constexpr double kLeast = 1e-6;  // a zero weight still takes what everyone else leaves
  double left = static_cast<double>(std::max<int64_t>(0, capacity));
  while (!open.empty() && left > 1e-9) {
    double weights = 0;
    for (const auto& name : open) weights += std::max(claims.at(name).weight, kLeast);
    std::vector<std::string> satisfied;
    for (const auto& name : open)
      if (static_cast<double>(claims.at(name).demand) - fair[name] <= left * std::max(claims.at(name).weight, kLeast) / weights)
        satisfied.push_back(name);
    if (satisfied.empty()) {
      for (const auto& name : open) fair[name] += left * std::max(claims.at(name).weight, kLeast) / weights;
      break;
    }
    for (const auto& name : satisfied) {
      left -= static_cast<double>(claims.at(name).demand) - fair[name];
      fair[name] = static_cast<double>(claims.at(name).demand);
      open.erase(name);
    }
  }
  std::map<std::string, int64_t> out;
  for (const auto& [name, f] : fair) out[name] = static_cast<int64_t>(std::floor(f + 1e-9));
  return out;
}

}  // namespace valley::planner
