// AWS Signature Version 4 for S3-compatible object stores, as pure functions over a request's
// parts (no clock, no I/O): the caller passes the time, so signatures are reproducible and the
// published AWS test vectors can check them. Hashing and HMAC come from OpenSSL.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace valley::storage {

struct Credentials {
  std::string access_key_id, secret_access_key, session_token;  // session_token optional
};

struct SignedRequest {
  std::string method = "GET";
  std::string path = "/";  // not yet encoded: "/bucket/key with spaces"
  std::vector<std::pair<std::string, std::string>> query;  // not yet encoded
  std::map<std::string, std::string> headers;  // host included; names any case
  std::string payload_sha256;  // hex; "UNSIGNED-PAYLOAD" allowed
};

std::string sha256_hex(std::string_view data);
std::string hmac_sha256(std::string_view key, std::string_view data);  // raw bytes
std::string hex(std::string_view bytes);

// RFC 3986 encoding as SigV4 wants it: unreserved characters kept, everything else %XX (upper case);
// '/' kept when `keep_slash` (paths).
std::string uri_encode(std::string_view s, bool keep_slash);

std::string canonical_request(const SignedRequest& r);
// amz_date: "20150830T123600Z"; scope: "<yyyymmdd>/<region>/<service>/aws4_request".
std::string string_to_sign(const std::string& canonical, const std::string& amz_date, const std::string& scope);
std::string signature(const std::string& secret, const std::string& amz_date, const std::string& region,
                      const std::string& service, const std::string& string_to_sign);

// Adds x-amz-date, x-amz-content-sha256 (when not set), x-amz-security-token (with a session
// token) and Authorization to r.headers.
void sign(SignedRequest& r, const Credentials& credentials, const std::string& region, const std::string& service,
          const std::string& amz_date);

}  // namespace valley::storage
