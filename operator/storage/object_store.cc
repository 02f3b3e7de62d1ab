#include "operator/storage/object_store.h"

#include <curl/curl.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace valley::storage {
namespace {

namespace fs = std::filesystem;

std::string trim_slashes(std::string s) {
  while (!s.empty() && s.front() == '/') s.erase(0, 1);
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

bool valid_bucket(const std::string& b, bool s3) {
  // S3 bucket rules: lower case, digits, '.', '-', 3-63 long; a PVC name is a DNS subdomain (1-253).
  if (s3 ? (b.size() < 3 || b.size() > 63) : (b.empty() || b.size() > 253)) return false;
  for (char c : b)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-')) return false;
  return std::isalnum(static_cast<unsigned char>(b.front())) && std::isalnum(static_cast<unsigned char>(b.back()));
}

std::string amz_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[20];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

size_t collect(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

class S3Store : public ObjectStore {
 public:
  S3Store(Location location, S3Settings settings) : location_(std::move(location)), settings_(std::move(settings)) {
    std::string e = settings_.endpoint;
    auto scheme_end = e.find("://");
    if (scheme_end == std::string::npos) throw StoreError("S3 endpoint must start with http:// or https://: " + e);
    base_ = trim_slashes(e.substr(0, e.find('/', scheme_end + 3) == std::string::npos ? e.size() : e.find('/', scheme_end + 3)));
    host_ = base_.substr(scheme_end + 3);
  }

  std::optional<std::string> get(const std::string& key) override {
    auto [status, body] = request("GET", key, "");
    // Only a missing key means "nothing written yet"; a missing bucket (also 404) is a store that
    // is not there, which the user must hear about rather than have the task start from scratch.
    if (status == 404 && body.find("<Code>NoSuchBucket</Code>") == std::string::npos) return std::nullopt;
    if (status != 200) throw StoreError("GET " + uri(key) + ": HTTP " + std::to_string(status) + ": " + excerpt(body));
    return body;
  }

  void put(const std::string& key, const std::string& data) override {
    auto [status, body] = request("PUT", key, data);
    if (status != 200) throw StoreError("PUT " + uri(key) + ": HTTP " + std::to_string(status) + ": " + excerpt(body));
  }

  std::string describe() const override {
    return "s3://" + location_.bucket + (location_.prefix.empty() ? "" : "/" + location_.prefix);
  }

 private:
  std::string uri(const std::string& key) const { return describe() + "/" + key; }
  // An S3 error's Code and Message (its RequestId and HostId change with every request, and an
  // error that reads differently each time would be reported again at every poll); other bodies
  // cut short.
  static std::string excerpt(const std::string& body) {
    auto element = [&](const std::string& name) {
      const std::string open = "<" + name + ">", close = "</" + name + ">";
      size_t a = body.find(open), b = a == std::string::npos ? a : body.find(close, a);
      return b == std::string::npos ? std::string() : body.substr(a + open.size(), b - a - open.size());
    };
    if (std::string code = element("Code"); !code.empty()) {
      std::string message = element("Message");
      return code + (message.empty() ? "" : ": " + message.substr(0, 300));
    }
    return body.substr(0, 300);
  }

  std::pair<long, std::string> request(const std::string& method, const std::string& key, const std::string& data) {
    SignedRequest r;
    r.method = method;
    r.path = "/" + location_.bucket + "/" + (location_.prefix.empty() ? "" : location_.prefix + "/") + key;
    r.headers["host"] = host_;
    r.payload_sha256 = sha256_hex(data);
    sign(r, settings_.credentials, settings_.region, "s3", amz_now());

    CURL* curl = curl_easy_init();
    if (!curl) throw StoreError("curl_easy_init failed");
    std::string url = base_ + uri_encode(r.path, true);
    std::string body;
    curl_slist* headers = nullptr;
    for (const auto& [k, v] : r.headers)
      if (k != "host") headers = curl_slist_append(headers, (k + ": " + v).c_str());
    headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 300L);
    if (!settings_.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, settings_.ca_file.c_str());
    if (method == "PUT") {
      curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "PUT");
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, data.data());
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(data.size()));
    }
    CURLcode rc = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    if (rc != CURLE_OK) throw StoreError(method + " " + uri(key) + ": " + curl_easy_strerror(rc));
    return {status, body};
  }

  Location location_;
  S3Settings settings_;
  std::string base_, host_;
};

class DirStore : public ObjectStore {
 public:
  explicit DirStore(std::string dir) : dir_(std::move(dir)) {}

  std::optional<std::string> get(const std::string& key) override {
    std::ifstream in(fs::path(dir_) / key, std::ios::binary);
    if (!in) return std::nullopt;
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

  void put(const std::string& key, const std::string& data) override {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    fs::path final_path = fs::path(dir_) / key;
    fs::path tmp = final_path;
    tmp += ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(data.data(), static_cast<std::streamsize>(data.size()));
      out.flush();
      if (!out) throw StoreError("write " + tmp.string() + " failed");
    }
    fs::rename(tmp, final_path, ec);  // atomic within a directory
    if (ec) throw StoreError("rename " + tmp.string() + ": " + ec.message());
  }

  std::string describe() const override { return "file://" + dir_; }

 private:
  std::string dir_;
};

}  // namespace

std::optional<Location> parse_location(const std::string& uri, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<Location> {
    if (error) *error = why;
    return std::nullopt;
  };
  auto sep = uri.find("://");
  if (sep == std::string::npos) return fail("checkpoint URI \"" + uri + "\" has no scheme (s3://, pvc:// or file://)");
  std::string scheme = uri.substr(0, sep), rest = uri.substr(sep + 3);
  Location l;
  if (scheme == "file") {
    if (rest.empty() || rest.front() != '/') return fail("file:// URI needs an absolute path: \"" + uri + "\"");
    l.scheme = Location::Scheme::File;
    l.path = rest;
    return l;
  }
  if (scheme != "s3" && scheme != "pvc") return fail("checkpoint URI scheme \"" + scheme + "\" is not s3, pvc or file");
  l.scheme = scheme == "s3" ? Location::Scheme::S3 : Location::Scheme::Pvc;
  auto slash = rest.find('/');
  l.bucket = rest.substr(0, slash);
  l.prefix = slash == std::string::npos ? "" : trim_slashes(rest.substr(slash));
  if (!valid_bucket(l.bucket, scheme == "s3"))
    return fail(scheme == "s3" ? "bucket name \"" + l.bucket + "\" is invalid (3-63 lower-case letters, digits, '.', '-')"
                               : "claim name \"" + l.bucket + "\" is invalid (a DNS subdomain: lower-case letters, digits, '.', '-')");
  if (l.prefix.find("..") != std::string::npos) return fail("checkpoint path must not contain \"..\": \"" + uri + "\"");
  return l;
}

std::string pvc_mount_path(const Location& location) { return "/valley/checkpoint/" + location.bucket; }
std::string pvc_directory(const Location& location) {
  return pvc_mount_path(location) + (location.prefix.empty() ? "" : "/" + location.prefix);
}

std::optional<S3Settings> s3_settings_from(const std::map<std::string, std::string>& values, std::string* error) {
  auto get = [&](const char* k) {
    auto it = values.find(k);
    return it == values.end() ? std::string() : it->second;
  };
  S3Settings s;
  s.endpoint = get("AWS_ENDPOINT_URL_S3");
  if (s.endpoint.empty()) s.endpoint = get("AWS_ENDPOINT_URL");
  if (s.endpoint.empty()) {
    std::string region = get("AWS_REGION").empty() ? get("AWS_DEFAULT_REGION") : get("AWS_REGION");
    s.endpoint = "https://s3." + (region.empty() ? std::string("us-east-1") : region) + ".amazonaws.com";
  }
  if (!get("AWS_REGION").empty()) {
    s.region = get("AWS_REGION");
  } else if (!get("AWS_DEFAULT_REGION").empty()) {
    s.region = get("AWS_DEFAULT_REGION");
  }
  s.credentials = {get("AWS_ACCESS_KEY_ID"), get("AWS_SECRET_ACCESS_KEY"), get("AWS_SESSION_TOKEN")};
  s.ca_file = get("AWS_CA_BUNDLE");
  if (s.credentials.access_key_id.empty() || s.credentials.secret_access_key.empty()) {
    if (error) *error = "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are required";
    return std::nullopt;
  }
  if (s.endpoint.rfind("http://", 0) != 0 && s.endpoint.rfind("https://", 0) != 0) {
    if (error) *error = "endpoint \"" + s.endpoint + "\" must start with http:// or https://";
    return std::nullopt;
  }
  return s;
}

std::unique_ptr<ObjectStore> make_s3_store(const Location& location, const S3Settings& settings) {
  return std::make_unique<S3Store>(location, settings);
}

std::unique_ptr<ObjectStore> make_dir_store(const std::string& directory) { return std::make_unique<DirStore>(directory); }

}  // namespace valley::storage
