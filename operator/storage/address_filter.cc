#include "operator/storage/address_filter.h"

#include <arpa/inet.h>

#include <array>
#include <cstring>

namespace valley::storage {
namespace {

struct Address {
  std::array<unsigned char, 16> bytes{};
  int bits = 0;  // 32 or 128
};

std::optional<Address> parse_address(const std::string& text) {
  Address a;
  if (inet_pton(AF_INET, text.c_str(), a.bytes.data()) == 1) {
    a.bits = 32;
    return a;
  }
  if (inet_pton(AF_INET6, text.c_str(), a.bytes.data()) == 1) {
    static constexpr unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(a.bytes.data(), kMapped, sizeof kMapped) == 0) {  // ::ffff:a.b.c.d
      std::memmove(a.bytes.data(), a.bytes.data() + 12, 4);
      std::memset(a.bytes.data() + 4, 0, 12);
      a.bits = 32;
    } else {
      a.bits = 128;
    }
    return a;
  }
  return std::nullopt;
}

// The network and its prefix length; nullopt when malformed.
std::optional<std::pair<Address, int>> parse_cidr(const std::string& cidr) {
  const size_t slash = cidr.find('/');
  if (slash == std::string::npos || slash + 1 >= cidr.size() || cidr.size() - slash > 4) return std::nullopt;
  auto net = parse_address(cidr.substr(0, slash));
  if (!net) return std::nullopt;
  int length = 0;
  for (size_t i = slash + 1; i < cidr.size(); ++i) {
    if (cidr[i] < '0' || cidr[i] > '9') return std::nullopt;
    length = length * 10 + (cidr[i] - '0');
  }
  if (length > net->bits) return std::nullopt;
  return std::make_pair(*net, length);
}

bool holds(const Address& net, int length, const Address& a) {
  if (net.bits != a.bits) return false;
  const int whole = length / 8, rest = length % 8;
  if (std::memcmp(net.bytes.data(), a.bytes.data(), static_cast<size_t>(whole)) != 0) return false;
  if (rest == 0) return true;
  const auto mask = static_cast<unsigned char>(0xff << (8 - rest));
  return (net.bytes[static_cast<size_t>(whole)] & mask) == (a.bytes[static_cast<size_t>(whole)] & mask);
}

}  // namespace

bool valid_cidr(const std::string& cidr) { return parse_cidr(cidr).has_value(); }

std::optional<std::string> denied_by(const std::string& address, const std::vector<std::string>& cidrs) {
  auto a = parse_address(address);
  if (!a) return std::nullopt;
  for (const auto& c : cidrs)
    if (auto net = parse_cidr(c); net && holds(net->first, net->second, *a)) return c;
  return std::nullopt;
}

}  // namespace valley::storage
