// libFuzzer target: SigV4's canonical path of an object key (a data set's keys and a checkpoint's
// prefix come from a tenant). The encoding keeps only unreserved characters and '/', escapes every
// other byte as %XX, and decodes back to the key; the canonical request of any path and query is
// built without throwing.
#include <cctype>

#include "operator/storage/sigv4.h"
#include "tests/fuzz/fuzz_support.h"

namespace {
std::string decoded(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace valley;
  const std::string key = fuzz::text_of(data, size);
  for (bool keep_slash : {true, false}) {
    const std::string encoded = storage::uri_encode(key, keep_slash);
    for (size_t i = 0; i < encoded.size(); ++i) {
      const unsigned char c = static_cast<unsigned char>(encoded[i]);
      const bool plain = std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/');
      const bool escape = c == '%' && i + 2 < encoded.size() && std::isxdigit(static_cast<unsigned char>(encoded[i + 1])) &&
                          std::isxdigit(static_cast<unsigned char>(encoded[i + 2])) && !std::islower(static_cast<unsigned char>(encoded[i + 1])) &&
                          !std::islower(static_cast<unsigned char>(encoded[i + 2]));
      FUZZ_REQUIRE(plain || escape, encoded);
      if (escape) i += 2;
    }
    FUZZ_REQUIRE(decoded(encoded) == key, encoded);
  }
  storage::SignedRequest r;
  r.method = "GET";
  r.path = "/bkt/" + key;
  r.query = {{"prefix", key}, {key, "v"}};
  r.headers["host"] = "127.0.0.1:7070";
  r.payload_sha256 = storage::sha256_hex("");
  (void)storage::canonical_request(r);
  return 0;
}
