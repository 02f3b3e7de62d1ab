#include "operator/storage/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "operator/kube/client.h"

namespace valley::storage {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Header values are trimmed and inner runs of spaces folded to one.
std::string trim_fold(const std::string& v) {
  std::string out;
  bool space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

std::string signed_header_names(const std::map<std::string, std::string>& headers) {
  std::vector<std::string> names;
  for (const auto& [k, v] : headers) names.push_back(lower(k));
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ";") + n;
  return out;
}

}  // namespace

std::string hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return hex(std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
}

std::string hmac_sha256(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
            data.size(), out, &len))
    throw std::runtime_error("HMAC-SHA256 failed");
  return std::string(reinterpret_cast<const char*>(out), len);
}

std::string uri_encode(std::string_view s, bool keep_slash) {
  if (!keep_slash) return kube::url_encode(std::string(s));
  // A path: each segment encoded, the slashes kept.
  std::string out;
  size_t start = 0;
  for (;;) {
    size_t slash = s.find('/', start);
    out += kube::url_encode(std::string(s.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start)));
    if (slash == std::string_view::npos) return out;
    out += '/';
    start = slash + 1;
  }
}

std::string canonical_request(const SignedRequest& r) {
  std::vector<std::pair<std::string, std::string>> query;
  for (const auto& [k, v] : r.query) query.push_back({uri_encode(k, false), uri_encode(v, false)});
  std::sort(query.begin(), query.end());
  std::string q;
  for (const auto& [k, v] : query) q += (q.empty() ? "" : "&") + k + "=" + v;
  std::map<std::string, std::string> headers;
  for (const auto& [k, v] : r.headers) headers[lower(k)] = trim_fold(v);
  std::string canonical_headers;
  for (const auto& [k, v] : headers) canonical_headers += k + ":" + v + "\n";
  return r.method + "\n" + uri_encode(r.path.empty() ? "/" : r.path, true) + "\n" + q + "\n" + canonical_headers + "\n" +
         signed_header_names(r.headers) + "\n" + r.payload_sha256;
}

std::string string_to_sign(const std::string& canonical, const std::string& amz_date, const std::string& scope) {
  return "AWS4-HMAC-SHA256\n" + amz_date + "\n" + scope + "\n" + sha256_hex(canonical);
}

std::string signature(const std::string& secret, const std::string& amz_date, const std::string& region,
                      const std::string& service, const std::string& to_sign) {
  std::string key = hmac_sha256("AWS4" + secret, amz_date.substr(0, 8));
  key = hmac_sha256(key, region);
  key = hmac_sha256(key, service);
  key = hmac_sha256(key, "aws4_request");
  return hex(hmac_sha256(key, to_sign));
}

void sign(SignedRequest& r, const Credentials& c, const std::string& region, const std::string& service,
          const std::string& amz_date) {
  if (amz_date.size() != 16) throw std::invalid_argument("amz_date must look like 20150830T123600Z");
  r.headers["x-amz-date"] = amz_date;
  if (r.payload_sha256.empty()) r.payload_sha256 = sha256_hex("");
  r.headers["x-amz-content-sha256"] = r.payload_sha256;
  if (!c.session_token.empty()) r.headers["x-amz-security-token"] = c.session_token;
  const std::string scope = amz_date.substr(0, 8) + "/" + region + "/" + service + "/aws4_request";
  const std::string to_sign = string_to_sign(canonical_request(r), amz_date, scope);
  std::string authorization = "AWS4-HMAC-SHA256 Credential=" + c.access_key_id + "/" + scope +
                              ", SignedHeaders=" + signed_header_names(r.headers) +
                              ", Signature=" + signature(c.secret_access_key, amz_date, region, service, to_sign);
  r.headers["Authorization"] = std::move(authorization);
}

}  // namespace valley::storage
