#include "tests/unit/support/fake_api.h"

#include <algorithm>
#include <chrono>
#include <sstream>

#include "operator/kube/timefmt.h"

namespace valley::testing {
namespace {

// Plurals whose objects have a status subresource (the kinds Valley writes status of, and reads).
const std::set<std::string> kWithStatus = {"trainingtasks", "tenants", "pricingpolicies", "pods", "nodes",
                                           "persistentvolumeclaims", "resourceclaims"};

std::string key_of(const kube::Resource& r, const std::string& ns, const std::string& name) {
  return r.namespaced ? ns + "/" + name : name;
}

kube::KubeError error(int status, const std::string& reason, const std::string& message) { return kube::KubeError(message, status, reason); }

const json& meta(const json& o) {
  static const json empty = json::object();
  return o.contains("metadata") && o["metadata"].is_object() ? o["metadata"] : empty;
}

// "a=b,c!=d,e,!f": equality, inequality, existence, absence (what Valley's selectors use).
bool labels_match(const json& object, const std::string& selector) {
  const json labels = meta(object).value("labels", json::object());
  std::stringstream in(selector);
  std::string term;
  while (std::getline(in, term, ',')) {
    if (term.empty()) continue;
    if (auto ne = term.find("!="); ne != std::string::npos) {
      const std::string k = term.substr(0, ne), v = term.substr(ne + 2);
      if (labels.contains(k) && labels[k] == v) return false;
    } else if (auto eq = term.find('='); eq != std::string::npos) {
      const std::string k = term.substr(0, eq), v = term.substr(term[eq + 1] == '=' ? eq + 2 : eq + 1);
      if (!labels.contains(k) || labels[k] != v) return false;
    } else if (term[0] == '!') {
      if (labels.contains(term.substr(1))) return false;
    } else if (!labels.contains(term)) {
      return false;
    }
  }
  return true;
}

std::string at_path(const json& object, const std::string& path) {
  const json* at = &object;
  std::stringstream in(path);
  std::string part;
  while (std::getline(in, part, '.')) {
    if (!at->is_object() || !at->contains(part)) return "";
    at = &(*at)[part];
  }
  return at->is_string() ? at->get<std::string>() : at->is_null() ? "" : at->dump();
}

bool fields_match(const json& object, const std::string& selector) {
  std::stringstream in(selector);
  std::string term;
  while (std::getline(in, term, ',')) {
    if (term.empty()) continue;
    const bool negated = term.find("!=") != std::string::npos;
    const auto op = term.find(negated ? "!=" : "=");
    if (op == std::string::npos) throw error(400, "BadRequest", "field selector " + term);
    const std::string value = term.substr(op + (negated || term.compare(op, 2, "==") == 0 ? 2 : 1));
    if ((at_path(object, term.substr(0, op)) == value) == negated) return false;
  }
  return true;
}

}  // namespace

void FakeApi::maybe_fail(const std::string& verb, const std::string& plural) {
  auto it = failures_.find({verb, plural});
  if (it == failures_.end()) return;
  const int status = it->second;
  failures_.erase(it);
  throw error(status, status == 409 ? "Conflict" : status == 404 ? "NotFound" : "InternalError", "injected " + verb + " " + plural + " failure");
}

json& FakeApi::existing(const kube::Resource& r, const std::string& ns, const std::string& name) {
  auto& store = stores_[r.plural];
  auto it = store.find(key_of(r, ns, kube::path_segment(name)));
  if (it == store.end()) throw error(404, "NotFound", r.plural + " \"" + name + "\" not found");
  return it->second;
}

void FakeApi::stamp(json& object) {
  object["metadata"]["resourceVersion"] = std::to_string(++rv_);
}

void FakeApi::record(const std::string& verb, const std::string& plural, const json& object) {
  const std::string ns = meta(object).value("namespace", "");
  writes_.push_back(verb + " " + plural + " " + (ns.empty() ? "" : ns + "/") + meta(object).value("name", ""));
}

json FakeApi::get(const kube::Resource& r, const std::string& ns, const std::string& name, const std::string&) {
  std::lock_guard lock(mu_);
  maybe_fail("get", r.plural);
  return existing(r, ns, name);
}

kube::ListResult FakeApi::list(const kube::Resource& r, const std::string& ns, const kube::ListOptions& options) {
  std::lock_guard lock(mu_);
  maybe_fail("list", r.plural);
  kube::ListResult out;
  for (const auto& [key, object] : stores_[r.plural]) {
    if (r.namespaced && !ns.empty() && meta(object).value("namespace", "") != ns) continue;
    if (!labels_match(object, options.label_selector) || !fields_match(object, options.field_selector)) continue;
    json item = object;
    if (options.item_transform) options.item_transform(item);
    out.items.push_back(std::move(item));
  }
  out.resource_version = std::to_string(rv_);
  out.pages = 1;
  return out;
}

json FakeApi::create(const kube::Resource& r, const std::string& ns, const json& object, const kube::FieldMask*) {
  std::lock_guard lock(mu_);
  maybe_fail("create", r.plural);
  return create_locked(r, ns, object);
}

json FakeApi::create_locked(const kube::Resource& r, const std::string& ns, const json& object) {
  json o = object;
  json& m = o["metadata"];
  if (!m.contains("name") && m.contains("generateName")) m["name"] = m["generateName"].get<std::string>() + std::to_string(++uids_);
  const std::string name = m.value("name", "");
  if (name.empty()) throw error(422, "Invalid", "metadata.name: Required value");
  if (r.namespaced) m["namespace"] = ns;
  auto& store = stores_[r.plural];
  const std::string key = key_of(r, ns, kube::path_segment(name));
  if (store.count(key)) throw error(409, "AlreadyExists", r.plural + " \"" + name + "\" already exists");
  m["uid"] = "uid-" + std::to_string(++uids_);
  m["creationTimestamp"] = kube::format_time(std::chrono::system_clock::now());
  m["generation"] = 1;
  m.erase("deletionTimestamp");
  stamp(o);
  store[key] = o;
  changes_.push_back({rv_, r.plural, ns, "ADDED", o, nullptr});
  record("create", r.plural, o);
  changed_.notify_all();
  return o;
}

json FakeApi::commit(const kube::Resource& r, const std::string& verb, json next) {
  const std::string ns = meta(next).value("namespace", ""), name = meta(next).value("name", "");
  json& stored = existing(r, ns, name);
  if (next == stored) return stored;  // nothing changed: no new resourceVersion, no event
  const json before = stored;
  if (next.value("spec", json()) != before.value("spec", json()))
    next["metadata"]["generation"] = before["metadata"].value("generation", 1) + 1;
  stamp(next);
  record(verb, r.plural, next);
  const bool deleting = meta(next).contains("deletionTimestamp");
  if (deleting && meta(next).value("finalizers", json::array()).empty()) {
    erase(r.plural, key_of(r, ns, name));
    return next;
  }
  stored = next;
  changes_.push_back({rv_, r.plural, ns, "MODIFIED", next, before});
  changed_.notify_all();
  return next;
}

void FakeApi::erase(const std::string& plural, const std::string& key) {
  auto& store = stores_[plural];
  auto it = store.find(key);
  if (it == store.end()) return;
  json gone = it->second;
  const std::string uid = meta(gone).value("uid", "");
  store.erase(it);
  gone["metadata"]["resourceVersion"] = std::to_string(++rv_);
  changes_.push_back({rv_, plural, meta(gone).value("namespace", ""), "DELETED", gone, nullptr});
  changed_.notify_all();
  // The garbage collector: what the deleted object owned goes too (finalizers hold it as usual).
  for (auto& [dependents_plural, dependents] : stores_) {
    std::vector<std::string> owned;
    for (const auto& [k, o] : dependents)
      for (const auto& ref : meta(o).value("ownerReferences", json::array()))
        if (ref.value("uid", "") == uid) owned.push_back(k);
    for (const auto& k : owned) {
      auto dependent = dependents.find(k);
      if (dependent == dependents.end()) continue;  // collected meanwhile, as another's dependent
      json& o = dependent->second;
      if (meta(o).value("finalizers", json::array()).empty()) {
        erase(dependents_plural, k);
      } else if (!meta(o).contains("deletionTimestamp")) {
        const json before = o;
        o["metadata"]["deletionTimestamp"] = kube::format_time(std::chrono::system_clock::now());
        stamp(o);
        changes_.push_back({rv_, dependents_plural, meta(o).value("namespace", ""), "MODIFIED", o, before});
      }
    }
  }
}

json FakeApi::update(const kube::Resource& r, const json& object, const std::string& subresource) {
  std::lock_guard lock(mu_);
  maybe_fail("update", r.plural);
  const std::string ns = meta(object).value("namespace", ""), name = meta(object).value("name", "");
  const json& stored = existing(r, ns, name);
  const std::string want = meta(object).value("resourceVersion", "");
  if (!want.empty() && want != meta(stored).value("resourceVersion", ""))
    throw error(409, "Conflict", "Operation cannot be fulfilled on " + r.plural + " \"" + name + "\": the object has been modified");
  json next = stored;
  if (subresource == "status") {
    next["status"] = object.value("status", json::object());
  } else {
    next = object;
    next["metadata"]["uid"] = stored["metadata"]["uid"];
    next["metadata"]["creationTimestamp"] = stored["metadata"]["creationTimestamp"];
    next["metadata"]["generation"] = stored["metadata"].value("generation", 1);
    if (meta(stored).contains("deletionTimestamp")) next["metadata"]["deletionTimestamp"] = stored["metadata"]["deletionTimestamp"];
    if (kWithStatus.count(r.plural)) {
      if (stored.contains("status")) next["status"] = stored["status"];
      else next.erase("status");
    }
  }
  next["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"];
  return commit(r, subresource == "status" ? "status" : "update", std::move(next));
}

json FakeApi::patch(const kube::Resource& r, const std::string& ns, const std::string& name, kube::PatchType type, const json& patch,
                    const std::string& subresource) {
  std::lock_guard lock(mu_);
  maybe_fail("patch", r.plural);
  return patch_locked(r, ns, name, type, patch, subresource);
}

json FakeApi::patch_locked(const kube::Resource& r, const std::string& ns, const std::string& name, kube::PatchType type, const json& patch,
                           const std::string& subresource) {
  const json& stored = existing(r, ns, name);
  json patched = stored;
  if (type == kube::PatchType::JSON) {
    try {
      patched = stored.patch(patch);
    } catch (const json::exception& e) {
      throw error(422, "Invalid", std::string("json patch: ") + e.what());
    }
  } else {
    patched.merge_patch(patch);
  }
  const std::string want = meta(patched).value("resourceVersion", "");
  if (!want.empty() && want != meta(stored).value("resourceVersion", ""))
    throw error(409, "Conflict", "Operation cannot be fulfilled on " + r.plural + " \"" + name + "\": the object has been modified");
  // With a status subresource, a patch of the status changes only it, and a patch of the object
  // everything else.
  json next = patched;
  if (kWithStatus.count(r.plural)) {
    next = subresource == "status" ? stored : patched;
    const json& status_from = subresource == "status" ? patched : stored;
    if (status_from.contains("status")) next["status"] = status_from["status"];
    else next.erase("status");
  }
  for (const char* fixed : {"uid", "namespace", "name", "creationTimestamp", "resourceVersion"})
    if (meta(stored).contains(fixed)) next["metadata"][fixed] = stored["metadata"][fixed];
  return commit(r, subresource == "status" ? "status" : "patch", std::move(next));
}

// Server-side apply, simplified: the applied object merged into what is stored (or created).
json FakeApi::apply(const kube::Resource& r, const json& object, const std::string&, bool, const std::string& subresource) {
  std::lock_guard lock(mu_);
  maybe_fail("apply", r.plural);
  const std::string ns = r.namespaced ? meta(object).value("namespace", "") : "", name = meta(object).value("name", "");
  if (!stores_[r.plural].count(key_of(r, ns, kube::path_segment(name)))) {
    if (subresource == "status") existing(r, ns, name);  // 404
    return create_locked(r, ns, object);
  }
  json body = object;
  body["metadata"].erase("resourceVersion");
  return patch_locked(r, ns, name, kube::PatchType::Merge, body, subresource);
}

bool FakeApi::remove(const kube::Resource& r, const std::string& ns, const std::string& name, const kube::DeleteOptions& options) {
  std::lock_guard lock(mu_);
  maybe_fail("delete", r.plural);
  auto& store = stores_[r.plural];
  auto it = store.find(key_of(r, ns, kube::path_segment(name)));
  if (it == store.end()) return false;
  const json& stored = it->second;
  if (!options.precondition_uid.empty() && options.precondition_uid != meta(stored).value("uid", ""))
    throw error(409, "Conflict", "Precondition failed: UID in precondition: " + options.precondition_uid);
  if (!options.precondition_resource_version.empty() && options.precondition_resource_version != meta(stored).value("resourceVersion", ""))
    throw error(409, "Conflict", "Precondition failed: ResourceVersion in precondition");
  record("delete", r.plural, stored);
  if (meta(stored).value("finalizers", json::array()).empty()) {
    erase(r.plural, it->first);
    return true;
  }
  if (!meta(stored).contains("deletionTimestamp")) {
    const json before = stored;
    it->second["metadata"]["deletionTimestamp"] = kube::format_time(std::chrono::system_clock::now());
    stamp(it->second);
    changes_.push_back({rv_, r.plural, ns, "MODIFIED", it->second, before});
    changed_.notify_all();
  }
  return true;
}

void FakeApi::watch(const kube::Resource& r, const std::string& ns, const kube::WatchOptions& options,
                    const std::function<bool(kube::WatchEvent&&)>& on_event, const std::atomic<bool>* cancel) {
  std::unique_lock lock(mu_);
  int64_t from = 0;
  std::vector<kube::WatchEvent> pending;
  auto in_scope = [&](const std::string& object_ns) { return !r.namespaced || ns.empty() || object_ns == ns; };
  if (options.resource_version.empty()) {  // the current state as ADDED, then what follows
    for (const auto& [key, object] : stores_[r.plural])
      if (in_scope(meta(object).value("namespace", "")) && labels_match(object, options.label_selector)) pending.push_back({"ADDED", object});
    from = rv_;
  } else {
    from = std::stoll(options.resource_version);
    if (from < compacted_) throw error(410, "Expired", "too old resource version: " + options.resource_version);
  }
  const int64_t generation = watch_generation_;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(options.timeout_seconds);
  size_t next = 0;
  while (true) {
    for (; next < changes_.size(); ++next) {
      const Change& c = changes_[next];
      if (c.rv <= from || c.plural != r.plural || !in_scope(c.ns)) continue;
      const bool now_matches = labels_match(c.object, options.label_selector);
      const bool matched = !c.before.is_null() && labels_match(c.before, options.label_selector);
      if (now_matches) pending.push_back({c.type, c.object});
      else if (matched) pending.push_back({"DELETED", c.object});
    }
    for (auto& e : pending) {
      lock.unlock();
      const bool more = on_event(std::move(e));
      lock.lock();
      if (!more) return;
    }
    pending.clear();
    if ((cancel && cancel->load()) || watch_generation_ != generation || std::chrono::steady_clock::now() >= until) return;
    changed_.wait_for(lock, std::chrono::milliseconds(20));
  }
}

std::vector<std::string> FakeApi::writes() const {
  std::lock_guard lock(mu_);
  return writes_;
}

int FakeApi::count(const std::string& verb, const std::string& plural) const {
  std::lock_guard lock(mu_);
  const std::string prefix = verb + " " + plural + " ";
  return static_cast<int>(std::count_if(writes_.begin(), writes_.end(), [&](const std::string& w) { return w.rfind(prefix, 0) == 0; }));
}

void FakeApi::fail_next(const std::string& verb, const std::string& plural, int status) {
  std::lock_guard lock(mu_);
  failures_[{verb, plural}] = status;
}

void FakeApi::end_watches() {
  std::lock_guard lock(mu_);
  ++watch_generation_;
  changed_.notify_all();
}

void FakeApi::compact() {
  std::lock_guard lock(mu_);
  compacted_ = rv_;
  changes_.clear();
  ++watch_generation_;  // open watches end (their place in the history is gone) and start again
  changed_.notify_all();
}

std::vector<json> FakeApi::objects(const std::string& plural, const std::string& ns) const {
  std::lock_guard lock(mu_);
  std::vector<json> out;
  auto it = stores_.find(plural);
  if (it == stores_.end()) return out;
  for (const auto& [key, object] : it->second)
    if (ns.empty() || meta(object).value("namespace", "") == ns) out.push_back(object);
  return out;
}

}  // namespace valley::testing
