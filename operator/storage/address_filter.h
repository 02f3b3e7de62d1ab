// Which addresses a store call may connect to. A store's endpoint is named by a tenant (their
// Secret's AWS_ENDPOINT_URL), and the operator reads it from inside the cluster: aimed at the cloud's
// instance metadata or at a service the tenant cannot reach, each read would be a request made with
// the operator's network position. The operator refuses link-local addresses (metadata services)
// and the CIDRs a task's own pods may not reach (--task-egress-except), checked on the address the
// connection actually goes to (after name resolution, so a name cannot be re-pointed under it).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace valley::storage {

// Link-local, IPv4 and IPv6: where clouds serve instance metadata and credentials.
inline const std::vector<std::string> kLinkLocal = {"169.254.0.0/16", "fe80::/10"};

// Whether `cidr` ("a.b.c.d/n" or an IPv6 prefix) is well formed.
bool valid_cidr(const std::string& cidr);

// The first of `cidrs` that holds `address` (a numeric IPv4 or IPv6 address); nullopt when none
// does, or when `address` is not numeric. An IPv4-mapped IPv6 address is checked as IPv4.
std::optional<std::string> denied_by(const std::string& address, const std::vector<std::string>& cidrs);

}  // namespace valley::storage
