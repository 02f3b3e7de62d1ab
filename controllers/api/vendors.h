// The GPU vendors Valley places, by the names the API uses (spec.vendors, PricingPolicy matches).
#pragma once

#include <string>

namespace valley::api {

// In the order a gang tries them when nothing else decides.
inline constexpr const char* kVendors[] = {"nvidia", "amd", "intel"};

inline bool is_vendor(const std::string& name) {
  for (const char* v : kVendors)
    if (name == v) return true;
  return false;
}

}  // namespace valley::api
