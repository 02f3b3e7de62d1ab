// Where checkpoints live, named by a URI, and the two operations Valley and its workloads need on
// it: read an object, write an object. Schemes:
//   s3://bucket/prefix  an S3-compatible store (path-style requests, SigV4; see S3Settings)
//   pvc://claim/path    a PersistentVolumeClaim: Valley mounts it in the task's pods at
//                       /valley/checkpoint/<claim>; inside a pod it is the directory under it
//   file:///dir         a local directory (workload runs outside Kubernetes, tests)
// Keys are relative to the prefix/path ("latest.json", "ckpt-00000120.bin"). Data sets and outputs
// (valley-io) use the same stores with list and streaming transfers.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "operator/storage/sigv4.h"

namespace valley::storage {

struct Location {
  enum class Scheme { S3, Pvc, File } scheme = Scheme::File;
  std::string bucket;  // S3 bucket, or PVC claim name
  std::string prefix;  // no leading or trailing '/'; may be empty
  std::string path;    // File: the directory
};

// nullopt + error when the URI is not one of the schemes above or is malformed.
std::optional<Location> parse_location(const std::string& uri, std::string* error);

// Where a pvc:// location appears inside the task's pods.
std::string pvc_mount_path(const Location& location);  // /valley/checkpoint/<claim>
std::string pvc_directory(const Location& location);   // the mount path plus the prefix

// How to reach an S3-compatible endpoint. From the environment names the AWS tools use, so one
// Secret serves the operator (which reads it) and the workload (envFrom).
struct S3Settings {
  std::string endpoint;  // "https://s3.us-east-1.amazonaws.com" or "http://127.0.0.1:7070"
  std::string region = "us-east-1";
  Credentials credentials;
  std::string ca_file;  // optional CA bundle for a private endpoint
  // upload() sends a file larger than this in parts of part_size (S3 takes 5 MiB to 5 GiB a part).
  uint64_t multipart_threshold = uint64_t{64} << 20;
  uint64_t part_size = uint64_t{16} << 20;
  // Bounds on what an endpoint may make a caller hold or wait for (a store is named by a tenant, and
  // may be hostile): an answer kept in memory (an object, a listing page, an error), a call that is
  // not a streamed transfer, and how many objects one list() reads. Past one: StoreError.
  uint64_t max_answer_bytes = uint64_t{64} << 20;
  std::chrono::seconds call_timeout{300};
  size_t max_listed = 0;  // 0: no bound
  // Addresses a call may not connect to (CIDRs, address_filter.h): refused before a byte is sent.
  std::vector<std::string> denied_cidrs;
};
// The bounds the operator reads tenants' stores with: its store threads serve every tenant, from
// inside the cluster; it connects to no link-local address and none of `denied_cidrs` (what a
// task's pods may not reach).
S3Settings with_operator_bounds(S3Settings s, const std::vector<std::string>& denied_cidrs = {});
// Keys: AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, AWS_REGION or AWS_DEFAULT_REGION,
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_CA_BUNDLE. nullopt + error when
// the keys or the endpoint are missing.
std::optional<S3Settings> s3_settings_from(const std::map<std::string, std::string>& values, std::string* error);

struct ObjectInfo {
  std::string key;  // relative to the location
  uint64_t size = 0;
  // The object's version: S3's ETag without quotes (else "modified:<LastModified>"); "" for a
  // directory store.
  std::string etag;
};

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;
  // nullopt when the object does not exist; throws StoreError on any other failure.
  virtual std::optional<std::string> get(const std::string& key) = 0;
  // Whole-object write; readers never see a partial object.
  virtual void put(const std::string& key, const std::string& data) = 0;
  virtual std::string describe() const = 0;  // for messages: the URI
  // The objects under the location, in key order; at most `limit` (0 = all). A missing bucket
  // throws StoreError (an empty list means a store that is there and empty).
  virtual std::vector<ObjectInfo> list(size_t limit = 0) = 0;
  // Streams `key` into the file at `path` from byte `offset` of the object on, appending (offset 0
  // truncates): a download resumed where it stopped. Returns the bytes written; throws when absent.
  virtual uint64_t download(const std::string& key, const std::string& path, uint64_t offset) = 0;
  // Streams the file at `path` to `key` (whole-object write, like put; S3: a large file in parts,
  // the upload aborted when a part fails so no parts are left behind).
  virtual void upload(const std::string& key, const std::string& path) = 0;
};

struct StoreError : std::runtime_error {
  explicit StoreError(const std::string& what, long status = 0) : std::runtime_error(what), http_status(status) {}
  long http_status;  // the store's answer, 0 when it gave none (no connection, a local file)
  // The store refused the request itself (no such bucket, access denied, a bad request): asking
  // again gives the same answer. Timeouts, throttling and server errors are not.
  bool permanent() const { return http_status >= 400 && http_status < 500 && http_status != 408 && http_status != 429; }
};

// An S3 store for `location` (Scheme::S3).
std::unique_ptr<ObjectStore> make_s3_store(const Location& location, const S3Settings& settings);
// A directory store (Scheme::File, or a PVC's directory inside a pod).
std::unique_ptr<ObjectStore> make_dir_store(const std::string& directory);

// Inside a pod: the store a URI names, S3 settings from the AWS_* variables of this process's
// environment (a pvc:// location is its mounted directory). nullptr + error when it cannot be opened.
std::unique_ptr<ObjectStore> open_store_from_environment(const std::string& uri, std::string* error);

}  // namespace valley::storage
