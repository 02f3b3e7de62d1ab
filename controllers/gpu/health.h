// GPU health from DCGM-exporter's metrics, as Prometheus holds them: which PromQL queries to ask and
// how their answers become a fault per node. Pure: the reconciler (controllers/task/gpu_watcher)
// runs the queries and feeds the samples in. (The rest of controllers/gpu: GPU resources, resources.h.)
//
// Signals (DCGM field names as DCGM-exporter publishes them; a series' node is its `Hostname` label,
// its GPU the `gpu` label):
//   xid         DCGM_FI_DEV_XID_ERRORS (the last XID code): a code in `critical_xids` within `window`
//   ecc_dbe     DCGM_FI_DEV_ECC_DBE_VOL_TOTAL: any new double-bit ECC error within `window`
//   row_remap   DCGM_FI_DEV_ROW_REMAP_FAILURE: a failed row remap (the GPU needs service)
//   temperature DCGM_FI_DEV_GPU_TEMP: at or above `temperature_limit` for the whole `window`
// A node with any such GPU is faulty until the window passes without one.
#pragma once

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "operator/prom/query.h"

namespace valley::gpu {

struct HealthConfig {
  std::chrono::seconds window{300};
  // XIDs that mean the GPU (not the program) failed: double-bit ECC (48), row remap failure (64),
  // NVLink (74), fallen off the bus (79), contained/uncontained ECC (94, 95), GSP errors (119, 120).
  std::set<int> critical_xids = {48, 64, 74, 79, 94, 95, 119, 120};
  double temperature_limit = 90;  // degrees C
};

struct Query {
  std::string signal;  // xid, ecc_dbe, row_remap, temperature
  std::string promql;
};

std::vector<Query> queries(const HealthConfig& c);

// node -> what is wrong there ("XID 79 (GPU has fallen off the bus) on GPU 3"), from each signal's
// samples. Nodes with nothing wrong are absent; so are samples without a Hostname.
std::map<std::string, std::string> node_faults(const HealthConfig& c, const std::map<std::string, std::vector<prom::Sample>>& by_signal);

}  // namespace valley::gpu
