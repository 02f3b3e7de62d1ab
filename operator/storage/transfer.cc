#include "operator/storage/transfer.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <vector>

#include "operator/json_text.h"

namespace valley::storage {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

json read_manifest(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return json::object();
  json m = json::parse(in, nullptr, false);
  return m.is_object() ? m : json::object();
}

// Written whole and renamed into place: a pod stopped mid-write leaves the previous manifest.
void write_manifest(const fs::path& path, const json& m) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << json_text(m);
    if (!out.flush()) throw StoreError("write " + tmp.string() + " failed");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw StoreError("rename " + tmp.string() + ": " + ec.message());
}

bool own_file(const std::string& relative) {
  for (const auto& part : fs::path(relative))
    if (part.string().rfind(".valley-", 0) == 0) return true;
  return false;
}

// A key is a relative path inside the directory: nothing absolute, no "..".
bool safe_key(const std::string& key) {
  if (key.empty() || key.front() == '/') return false;
  for (const auto& part : fs::path(key))
    if (part == ".." || part == ".") return false;
  return true;
}

std::string human_bytes(uint64_t b) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1000 && u < 4) v /= 1000, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

// Held for the life of the object: an exclusive flock on the directory's lock file.
class DirLock {
 public:
  explicit DirLock(const fs::path& dir) : fd_(::open((dir / kDataLock).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ < 0) throw StoreError("open " + (dir / kDataLock).string() + ": " + std::strerror(errno));
    while (::flock(fd_, LOCK_EX) != 0)
      if (errno != EINTR) throw StoreError("lock " + (dir / kDataLock).string() + ": " + std::strerror(errno));
  }
  ~DirLock() { ::close(fd_); }
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_;
};

// Removes what an earlier call copied whose object the store no longer lists.
void remove_unlisted(const fs::path& dir, const std::set<std::string>& listed, json& done, json& partial, TransferSummary& s) {
  std::error_code ec;
  for (auto it = done.begin(); it != done.end();) {
    if (listed.count(it.key())) {
      ++it;
      continue;
    }
    if (safe_key(it.key())) fs::remove(dir / it.key(), ec);
    it = done.erase(it);
    ++s.removed;
  }
  for (auto it = partial.begin(); it != partial.end();) {
    if (listed.count(it.key())) {
      ++it;
      continue;
    }
    fs::path part = dir / it.key();
    part += kPartSuffix;
    if (safe_key(it.key())) fs::remove(part, ec);
    it = partial.erase(it);
  }
}

}  // namespace

std::string describe(const TransferSummary& s) {
  return std::to_string(s.files) + (s.files == 1 ? " file, " : " files, ") + human_bytes(s.bytes) + " (" + std::to_string(s.copied) +
         " copied, " + std::to_string(s.resumed) + " resumed, " + std::to_string(s.unchanged) + " unchanged" +
         (s.removed ? ", " + std::to_string(s.removed) + " removed" : "") + ")";
}

TransferSummary fetch_into(ObjectStore& store, const std::string& dir, const TransferLog& log) {
  TransferSummary s;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw StoreError("create " + dir + ": " + ec.message());
  const DirLock lock(dir);
  const fs::path manifest_path = fs::path(dir) / kDataManifest;
  json manifest = read_manifest(manifest_path);
  json& done = manifest["files"];
  json& partial = manifest["partial"];  // key -> the etag its .valley-part belongs to
  if (!done.is_object()) done = json::object();
  if (!partial.is_object()) partial = json::object();
  std::vector<ObjectInfo> objects = store.list();
  std::set<std::string> listed;
  for (const ObjectInfo& o : objects) listed.insert(o.key);
  remove_unlisted(dir, listed, done, partial, s);
  if (s.removed) write_manifest(manifest_path, manifest);
  for (const ObjectInfo& o : objects) {
    if (own_file(o.key)) continue;
    if (!safe_key(o.key)) throw StoreError(store.describe() + ": object key \"" + o.key + "\" is not a relative path");
    ++s.files;
    s.bytes += o.size;
    const fs::path target = fs::path(dir) / o.key;
    const json* had = done.contains(o.key) ? &done[o.key] : nullptr;
    if (had && had->value("etag", "") == o.etag && had->value("size", uint64_t{0}) == o.size && fs::exists(target, ec) &&
        fs::file_size(target, ec) == o.size) {
      ++s.unchanged;
      continue;
    }
    fs::create_directories(target.parent_path(), ec);
    fs::path part = target;
    part += kPartSuffix;
    uint64_t offset = 0;
    if (partial.value(o.key, std::string("-")) == o.etag && !o.etag.empty() && fs::exists(part, ec)) offset = fs::file_size(part, ec);
    if (offset > o.size) offset = 0;
    if (offset == 0) {
      partial[o.key] = o.etag;  // so a stop mid-copy can resume this very object
      write_manifest(manifest_path, manifest);
    }
    const uint64_t got = offset == o.size ? 0 : store.download(o.key, part.string(), offset);
    if (offset + got != o.size)
      throw StoreError(store.describe() + "/" + o.key + ": got " + std::to_string(offset + got) + " of " + std::to_string(o.size) + " bytes");
    fs::rename(part, target, ec);
    if (ec) throw StoreError("rename " + part.string() + ": " + ec.message());
    done[o.key] = {{"etag", o.etag}, {"size", o.size}};
    partial.erase(o.key);
    write_manifest(manifest_path, manifest);
    ++s.copied;
    s.copied_bytes += got;
    if (offset) {
      ++s.resumed;
      if (log) log("resumed " + o.key + " at byte " + std::to_string(offset));
    }
  }
  return s;
}

TransferSummary keep_from(const std::string& dir, ObjectStore& store, const TransferLog& log) {
  TransferSummary s;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return s;
  const fs::path manifest_path = fs::path(dir) / kKeptManifest;
  json manifest = read_manifest(manifest_path);
  std::map<std::string, fs::path> files;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    const std::string rel = fs::relative(it->path(), dir).generic_string();
    if (!own_file(rel)) files[rel] = it->path();
  }
  for (const auto& [rel, path] : files) {
    const uint64_t size = fs::file_size(path, ec);
    const auto mtime = static_cast<int64_t>(fs::last_write_time(path, ec).time_since_epoch().count());
    ++s.files;
    s.bytes += size;
    const json& had = manifest.contains(rel) ? manifest[rel] : json();
    if (had.is_object() && had.value("size", uint64_t{0}) == size && had.value("mtime", int64_t{0}) == mtime) {
      ++s.unchanged;
      continue;
    }
    store.upload(rel, path.string());
    manifest[rel] = {{"size", size}, {"mtime", mtime}};
    write_manifest(manifest_path, manifest);
    ++s.copied;
    s.copied_bytes += size;
    if (log) log("kept " + rel + " (" + human_bytes(size) + ")");
  }
  return s;
}

}  // namespace valley::storage
