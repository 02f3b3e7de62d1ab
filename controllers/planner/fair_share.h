// Weighted max-min fair shares ("water-filling"): capacity is handed out in rounds by weight among
// the tenants that still want more; a tenant that wants less than its round's share keeps what it
// wants, and what it leaves goes round again. A tenant's fair share is then what it would hold if
// every backlogged tenant got the same amount per unit of weight. The planner's reclaim, the Tenant
// status and the trace replay's figures all take fair shares from here.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace valley::planner {

struct FairShareClaim {
  double weight = 1;    // > 0; tenants of zero weight get only what others leave
  int64_t demand = 0;   // what it holds plus what it waits for, in any unit (thousandths of a GPU)
};

// tenant -> its fair share of `capacity`, in the unit of the demands (never more than its demand).
std::map<std::string, int64_t> fair_shares(int64_t capacity, const std::map<std::string, FairShareClaim>& claims);

}  // namespace valley::planner
