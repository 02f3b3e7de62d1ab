#include "controllers/gpu/health.h"

#include <algorithm>
#include <cmath>

namespace valley::gpu {
namespace {

std::string xid_name(int xid) {
  switch (xid) {
    case 48: return "double-bit ECC error";
    case 64: return "ECC row remap failure";
    case 74: return "NVLink error";
    case 79: return "GPU has fallen off the bus";
    case 94: return "contained ECC error";
    case 95: return "uncontained ECC error";
    case 119: return "GSP RPC timeout";
    case 120: return "GSP error";
    default: return "";
  }
}

std::string range(std::chrono::seconds window) { return "[" + std::to_string(window.count()) + "s]"; }

std::string label(const prom::Sample& s, const char* name) {
  auto it = s.labels.find(name);
  return it == s.labels.end() ? "" : it->second;
}

}  // namespace

std::vector<Query> queries(const HealthConfig& c) {
  const std::string w = range(c.window);
  return {{"xid", "max_over_time(DCGM_FI_DEV_XID_ERRORS" + w + ")"},
          {"ecc_dbe", "increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" + w + ")"},
          {"row_remap", "max_over_time(DCGM_FI_DEV_ROW_REMAP_FAILURE" + w + ")"},
          {"temperature", "min_over_time(DCGM_FI_DEV_GPU_TEMP" + w + ")"}};
}

std::map<std::string, std::string> node_faults(const HealthConfig& c, const std::map<std::string, std::vector<prom::Sample>>& by_signal) {
  std::map<std::string, std::string> out;
  auto note = [&](const prom::Sample& s, const std::string& what) {
    const std::string node = label(s, "Hostname");
    if (node.empty() || out.count(node)) return;  // the first fault found says it
    const std::string gpu = label(s, "gpu");
    out[node] = what + (gpu.empty() ? "" : " on GPU " + gpu) + " (DCGM)";
  };
  for (const auto& [signal, samples] : by_signal) {
    for (const auto& s : samples) {
      if (signal == "xid") {
        const double code = std::round(s.value);
        if (code > 0 && code < 100000 && c.critical_xids.count(static_cast<int>(code))) {
          const std::string name = xid_name(static_cast<int>(code));
          note(s, "XID " + std::to_string(static_cast<int>(code)) + (name.empty() ? "" : " (" + name + ")"));
        }
      } else if (signal == "ecc_dbe") {
        if (s.value > 0) note(s, "double-bit ECC errors");
      } else if (signal == "row_remap") {
        if (s.value > 0) note(s, "row remap failure");
      } else if (signal == "temperature") {
        if (s.value >= c.temperature_limit)
          // (A value past any real temperature is still a fault; it is shown capped.)
          note(s, "temperature " + std::to_string(static_cast<int>(std::min(s.value, 1000.0))) + " C for " + std::to_string(c.window.count()) + "s");
      }
    }
  }
  return out;
}

}  // namespace valley::gpu
