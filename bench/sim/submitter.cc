#include "bench/sim/submitter.h"

#include <chrono>

#include "controllers/cost/engine.h"

namespace valley::sim {

int64_t gpu_hour_price(const Inputs& in, const Pool& pool) {
  const auto noon = kube::SystemTime{} + std::chrono::seconds(in.workload.start_epoch + 12 * 3600);
  const auto rate = cost::rate_for(in.pricing, pool.vendor, pool.labels);
  const auto hour = cost::charge_interval(in.pricing, rate, 1000, noon, noon + std::chrono::hours(1));
  return hour.gpu + hour.energy;
}

const Pool* cheapest_pool_with_room(const Inputs& in, const std::map<std::string, int64_t>& reserved, int64_t gpus) {
  const Pool* best = nullptr;
  int64_t best_price = 0;
  for (const auto& pool : in.cluster.pools) {
    auto r = reserved.find(pool.name);
    const int64_t free = int64_t{pool.nodes} * pool.gpus_per_node - (r == reserved.end() ? 0 : r->second);
    const int64_t price = gpu_hour_price(in, pool);
    if (free >= gpus && (!best || price < best_price)) best = &pool, best_price = price;
  }
  return best;
}

}  // namespace valley::sim
