#include "operator/storage/object_store.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <strings.h>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "operator/kube/remote_clock.h"
#include "operator/storage/address_filter.h"
#include "operator/storage/s3_xml.h"
#include "operator/text.h"

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

// A signature is valid only within minutes of the store's own time: sign by the store's clock as
// its answers' Date headers show it (one per endpoint), not this host's, which may have been stepped.
kube::RemoteClock& store_clock(const std::string& endpoint) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<kube::RemoteClock>> clocks;
  std::lock_guard lock(mu);
  auto& c = clocks[endpoint];
  if (!c) c = std::make_unique<kube::RemoteClock>();
  return *c;
}

std::string amz_time(kube::SystemTime now) {
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[20];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

// What the header callback keeps of an answer: its ETag (when asked for) and its Date.
struct Headers {
  std::string* etag = nullptr;
  std::string date;
  std::chrono::steady_clock::time_point date_received;
};

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
    Call c{"GET", key};
    auto [status, body] = request(c);
    // Only a missing key means "nothing written yet"; a missing bucket (also 404) is a store that
    // is not there, which the user must hear about rather than have the task start from scratch.
    if (status == 404 && body.find("<Code>NoSuchBucket</Code>") == std::string::npos) return std::nullopt;
    if (status != 200) throw StoreError("GET " + uri(key) + ": HTTP " + std::to_string(status) + ": " + s3_error_excerpt(body), status);
    return body;
  }

  void put(const std::string& key, const std::string& data) override {
    Call c{"PUT", key};
    c.body = &data;
    auto [status, body] = request(c);
    if (status != 200) throw StoreError("PUT " + uri(key) + ": HTTP " + std::to_string(status) + ": " + s3_error_excerpt(body), status);
  }

  std::string describe() const override {
    return "s3://" + location_.bucket + (location_.prefix.empty() ? "" : "/" + location_.prefix);
  }

  std::vector<ObjectInfo> list(size_t limit) override {
    std::vector<ObjectInfo> out;
    const std::string prefix = location_.prefix.empty() ? "" : location_.prefix + "/";
    std::string token;
    while (true) {
      Call c{"GET", ""};
      c.bucket_only = true;
      c.query = {{"list-type", "2"}, {"prefix", prefix}};
      if (limit) c.query.push_back({"max-keys", std::to_string(std::min<size_t>(limit - out.size(), 1000))});
      if (!token.empty()) c.query.push_back({"continuation-token", token});
      auto [status, body] = request(c);
      if (status != 200) throw StoreError("LIST " + describe() + ": HTTP " + std::to_string(status) + ": " + s3_error_excerpt(body), status);
      ListPage page = parse_list_page(body, prefix, describe());
      for (auto& o : page.objects) {
        out.push_back(std::move(o));
        if (limit && out.size() >= limit) return out;
        if (settings_.max_listed && out.size() > settings_.max_listed)
          throw StoreError("LIST " + describe() + ": more than " + std::to_string(settings_.max_listed) + " objects");
      }
      if (!page.truncated || page.next_token.empty()) return out;
      token = page.next_token;
    }
  }

  uint64_t download(const std::string& key, const std::string& path, uint64_t offset) override {
    std::FILE* f = std::fopen(path.c_str(), offset ? "ab" : "wb");
    if (!f) throw StoreError("open " + path + " for writing failed");
    Call c{"GET", key};
    c.sink = f;
    if (offset) c.range_from = offset;
    auto [status, body] = request(c);
    const long written = std::ftell(f);
    const bool closed = std::fclose(f) == 0;
    if (status != 200 && status != 206) throw StoreError("GET " + uri(key) + ": HTTP " + std::to_string(status) + ": " + s3_error_excerpt(body), status);
    if (!closed) throw StoreError("write " + path + " failed");
    return static_cast<uint64_t>(written) - offset;
  }

  void upload(const std::string& key, const std::string& path) override {
    const uint64_t size = static_cast<uint64_t>(fs::file_size(path));
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) throw StoreError("open " + path + " failed");
    try {
      if (size > settings_.multipart_threshold) {
        upload_in_parts(key, f, size);
      } else {
        Call c{"PUT", key};
        c.source = f;
        c.source_size = size;
        expect_ok(c, request(c));
      }
    } catch (...) {
      std::fclose(f);
      throw;
    }
    std::fclose(f);
  }

 private:
  struct Call;
  void expect_ok(const Call& c, const std::pair<long, std::string>& r) const {
    // CompleteMultipartUpload may answer 200 with an error in its body.
    if (r.first != 200 || r.second.find("<Error>") != std::string::npos)
      throw StoreError(c.method + " " + uri(c.key) + ": HTTP " + std::to_string(r.first) + ": " + s3_error_excerpt(r.second), r.first);
  }

  void upload_in_parts(const std::string& key, std::FILE* f, uint64_t size) {
    const std::string empty;
    Call start{"POST", key};
    start.query = {{"uploads", ""}};
    start.body = &empty;
    auto started = request(start);
    expect_ok(start, started);
    const std::string id = xml_text(xml_element(started.second, "UploadId"));
    if (id.empty()) throw StoreError("POST " + uri(key) + "?uploads: no UploadId in the answer");
    try {
      std::string parts;
      int number = 1;
      for (uint64_t offset = 0; offset < size; offset += settings_.part_size, ++number) {
        Call part{"PUT", key};
        part.query = {{"partNumber", std::to_string(number)}, {"uploadId", id}};
        part.source = f;
        part.source_size = std::min(settings_.part_size, size - offset);
        std::string etag;
        part.etag = &etag;
        expect_ok(part, request(part));
        parts += "<Part><PartNumber>" + std::to_string(number) + "</PartNumber><ETag>" + etag + "</ETag></Part>";
      }
      const std::string xml = "<CompleteMultipartUpload>" + parts + "</CompleteMultipartUpload>";
      Call done{"POST", key};
      done.query = {{"uploadId", id}};
      done.body = &xml;
      expect_ok(done, request(done));
    } catch (...) {
      Call abort{"DELETE", key};
      abort.query = {{"uploadId", id}};
      try {
        request(abort);
      } catch (const StoreError&) {  // the store's lifecycle rules collect what is left
      }
      throw;
    }
  }

 private:
  // One request: a key's object (or the bucket itself), with a body from a string or a file and the
  // response into a string or a file (error bodies always into the string).
  struct Call {
    Call(std::string m, std::string k) : method(std::move(m)), key(std::move(k)) {}
    std::string method, key;
    bool bucket_only = false;
    std::vector<std::pair<std::string, std::string>> query;
    const std::string* body = nullptr;
    std::FILE* source = nullptr;
    uint64_t source_size = 0;
    std::FILE* sink = nullptr;
    uint64_t range_from = 0;
    std::string* etag = nullptr;  // the response's ETag header, when asked for
  };
  struct Source {
    std::FILE* file;
    uint64_t left;  // a part reads no further than its size
  };
  struct Sink {
    std::FILE* file;
    std::string* body;
    long* status;
    CURL* curl;
    uint64_t max_body;
    bool too_large = false;
  };

  std::string uri(const std::string& key) const { return describe() + "/" + key; }
  // A successful response's body goes to the file; anything else (an error's XML) to the string.
  // Before a request goes out on a connection: refused when the address it reached is denied.
  struct Gate {
    const std::vector<std::string>* denied;
    std::string refused;  // "<address> (in <cidr>)"
  };
  static int check_address(void* data, char* primary_ip, char*, int, int) {
    auto* gate = static_cast<Gate*>(data);
    if (auto cidr = denied_by(primary_ip, *gate->denied)) {
      gate->refused = std::string(primary_ip) + " (in " + *cidr + ")";
      return CURL_PREREQFUNC_ABORT;
    }
    return CURL_PREREQFUNC_OK;
  }

  static size_t to_sink(char* data, size_t size, size_t n, void* out) {
    auto* s = static_cast<Sink*>(out);
    if (*s->status == 0) curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, s->status);
    if (s->file && (*s->status == 200 || *s->status == 206)) return std::fwrite(data, size, n, s->file) * size;
    if (s->body->size() + size * n > s->max_body) {
      s->too_large = true;
      return 0;  // curl ends the call (CURLE_WRITE_ERROR)
    }
    s->body->append(data, size * n);
    return size * n;
  }
  static size_t from_file(char* data, size_t size, size_t n, void* in) {
    auto* s = static_cast<Source*>(in);
    const size_t got = std::fread(data, 1, static_cast<size_t>(std::min<uint64_t>(size * n, s->left)), s->file);
    s->left -= got;
    return got;
  }
  static size_t header_line(char* data, size_t size, size_t n, void* out) {
    auto* h = static_cast<Headers*>(out);
    std::string line(data, size * n);
    auto value = [&](size_t name_size) {
      std::string v = line.substr(name_size);
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.erase(0, 1);
      while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' ')) v.pop_back();
      return v;
    };
    if (h->etag && line.size() > 5 && strncasecmp(line.c_str(), "etag:", 5) == 0) *h->etag = value(5);
    if (line.size() > 5 && strncasecmp(line.c_str(), "date:", 5) == 0) {
      h->date = value(5);
      h->date_received = std::chrono::steady_clock::now();
    }
    return size * n;
  }

  std::pair<long, std::string> request(const Call& call) {
    SignedRequest r;
    r.method = call.method;
    r.path = "/" + location_.bucket + (call.bucket_only ? "" : "/" + (location_.prefix.empty() ? "" : location_.prefix + "/") + call.key);
    r.query = call.query;
    r.headers["host"] = host_;
    if (call.range_from) r.headers["range"] = "bytes=" + std::to_string(call.range_from) + "-";
    // A streamed file is not hashed beforehand: SigV4 allows an unsigned payload.
    r.payload_sha256 = call.source ? "UNSIGNED-PAYLOAD" : sha256_hex(call.body ? *call.body : std::string());
    kube::RemoteClock& clock = store_clock(base_);
    sign(r, settings_.credentials, settings_.region, "s3", amz_time(clock.now()));

    CURL* curl = curl_easy_init();
    if (!curl) throw StoreError("curl_easy_init failed");
    std::string url = base_ + uri_encode(r.path, true), query;
    for (const auto& [k, v] : r.query) query += (query.empty() ? "?" : "&") + uri_encode(k, false) + "=" + uri_encode(v, false);
    url += query;
    std::string body;
    long status = 0;
    Sink sink{call.sink, &body, &status, curl, settings_.max_answer_bytes};
    curl_slist* headers = nullptr;
    for (const auto& [k, v] : r.headers)
      if (k != "host") headers = curl_slist_append(headers, (k + ": " + v).c_str());
    headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, to_sink);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
    // Whole-object calls are bounded; a streamed transfer may take long but must keep moving.
    if (call.source || call.sink) {
      curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
      curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 60L);
    } else {
      curl_easy_setopt(curl, CURLOPT_TIMEOUT, static_cast<long>(settings_.call_timeout.count()));
    }
    if (!settings_.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, settings_.ca_file.c_str());
    Gate gate{&settings_.denied_cidrs, {}};
    if (!settings_.denied_cidrs.empty()) {
      curl_easy_setopt(curl, CURLOPT_PREREQFUNCTION, check_address);
      curl_easy_setopt(curl, CURLOPT_PREREQDATA, &gate);
    }
    Source source{call.source, call.source_size};
    if (call.source) {
      curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(curl, CURLOPT_READFUNCTION, from_file);
      curl_easy_setopt(curl, CURLOPT_READDATA, &source);
      curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(call.source_size));
    } else if (call.body) {
      curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, call.method.c_str());
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, call.body->data());
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(call.body->size()));
    } else if (call.method != "GET") {
      curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, call.method.c_str());
    }
    Headers answer;
    answer.etag = call.etag;
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, header_line);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &answer);
    CURLcode rc = curl_easy_perform(curl);
    if (!answer.date.empty()) clock.observe_http_date(answer.date, answer.date_received);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    const std::string what = call.bucket_only ? describe() : uri(call.key);
    if (sink.too_large)
      throw StoreError(call.method + " " + what + ": the answer is larger than " + std::to_string(settings_.max_answer_bytes >> 20) + " MiB");
    if (!gate.refused.empty())
      throw StoreError(call.method + " " + what + ": refused: the endpoint's address " + gate.refused +
                       " is one the operator does not connect to for a task (link-local, or what its pods may not reach)");
    if (rc != CURLE_OK) throw StoreError(call.method + " " + what + ": " + curl_easy_strerror(rc));
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

  std::vector<ObjectInfo> list(size_t limit) override {
    std::vector<ObjectInfo> out;
    std::error_code ec;
    if (!fs::is_directory(dir_, ec)) throw StoreError(describe() + ": no such directory");
    for (auto it = fs::recursive_directory_iterator(dir_, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      if (it->is_regular_file()) out.push_back({fs::relative(it->path(), dir_).generic_string(), static_cast<uint64_t>(it->file_size()), ""});
    std::sort(out.begin(), out.end(), [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
    if (limit && out.size() > limit) out.resize(limit);
    return out;
  }

  uint64_t download(const std::string& key, const std::string& path, uint64_t offset) override {
    std::ifstream in(fs::path(dir_) / key, std::ios::binary);
    if (!in) throw StoreError(describe() + "/" + key + ": no such object");
    in.seekg(static_cast<std::streamoff>(offset));
    std::ofstream out(path, std::ios::binary | (offset ? std::ios::app : std::ios::trunc));
    out << in.rdbuf();
    if (!out.flush()) throw StoreError("write " + path + " failed");
    return static_cast<uint64_t>(fs::file_size(path)) - offset;
  }

  void upload(const std::string& key, const std::string& path) override {
    std::error_code ec;
    fs::path final_path = fs::path(dir_) / key;
    fs::create_directories(final_path.parent_path(), ec);
    fs::path tmp = final_path;
    tmp += ".tmp";
    fs::copy_file(path, tmp, fs::copy_options::overwrite_existing, ec);
    if (!ec) fs::rename(tmp, final_path, ec);
    if (ec) throw StoreError("copy " + path + " to " + final_path.string() + ": " + ec.message());
  }

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

namespace {
// Every variable s3_settings_from reads (the AWS SDKs' names).
constexpr const char* kS3Variables[] = {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL",      "AWS_REGION",        "AWS_DEFAULT_REGION",
                                        "AWS_ACCESS_KEY_ID",   "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_CA_BUNDLE"};
}  // namespace

S3Settings with_operator_bounds(S3Settings s, const std::vector<std::string>& denied_cidrs) {
  s.denied_cidrs = kLinkLocal;
  s.denied_cidrs.insert(s.denied_cidrs.end(), denied_cidrs.begin(), denied_cidrs.end());
  // A checkpoint record, a report or an error fits in a MiB, a listing page of 1,000 keys in a few
  // hundred KiB; half a minute is long for either. A data set's listing of more objects than this is
  // refused rather than held: the operator's store threads serve every tenant.
  s.max_answer_bytes = uint64_t{8} << 20;
  s.call_timeout = std::chrono::seconds(30);
  s.max_listed = 1'000'000;
  return s;
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

std::unique_ptr<ObjectStore> open_store_from_environment(const std::string& uri, std::string* error) {
  auto location = parse_location(uri, error);
  if (!location) return nullptr;
  switch (location->scheme) {
    case Location::Scheme::File:
      return make_dir_store(location->path);
    case Location::Scheme::Pvc:
      return make_dir_store(pvc_directory(*location));
    case Location::Scheme::S3: {
      std::map<std::string, std::string> values;
      for (const char* k : kS3Variables)
        if (const char* v = std::getenv(k); v && *v) values[k] = v;
      auto settings = s3_settings_from(values, error);
      return settings ? make_s3_store(*location, *settings) : nullptr;
    }
  }
  return nullptr;
}

}  // namespace valley::storage
