// Standard base64 (RFC 4648, with padding), as kubeconfig `*-data` fields and Secrets use it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace valley::kube {

std::string base64_encode(std::string_view bytes);
// nullopt when the input is not valid base64. Whitespace (line breaks in pasted data) is ignored.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace valley::kube
