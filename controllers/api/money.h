// Money as integer micro-units of the policy's currency (1 USD = 1'000'000): sums of many small
// charges stay exact, and no two machines round differently. An API value type: spec.maxCost and
// the PricingPolicy's and Tenant's amounts are read by the same parser.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace valley::api {

using Micros = int64_t;

// "12.34" -> 12'340'000; up to 6 decimals; nullopt when malformed or negative.
std::optional<Micros> parse_money(const std::string& text);
// Rounded half-up to `decimals` (0-6): 12'345'678 -> "12.35" with 2.
std::string format_money(Micros amount, int decimals = 2);
// A decimal factor as thousandths ("1.5" -> 1500); up to 3 decimals.
std::optional<int64_t> parse_milli(const std::string& text);
// Thousandths as a decimal string (1500 -> "1.5", 12 -> "0.012").
std::string format_milli(int64_t milli);

}  // namespace valley::api
