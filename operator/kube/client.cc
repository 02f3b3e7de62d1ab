#include "operator/kube/client.h"

#include <cctype>
#include <exception>

#include "operator/kube/error.h"
#include "operator/json_text.h"

namespace valley::kube {

void throw_status(const std::string& what, const HttpResponse& response) {
  std::string message = what + ": HTTP " + std::to_string(response.status);
  std::string reason;
  json status = json::parse(response.body, nullptr, false);
  if (status.is_object() && status.value("kind", "") == "Status") {
    reason = status.value("reason", "");
    if (auto m = status.value("message", ""); !m.empty()) message += ": " + m;
  } else if (!response.body.empty()) {
    message += ": " + response.body.substr(0, 512);
  }
  throw KubeError(message, response.status, reason);
}

std::string url_encode(const std::string& value) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string resource_version_of(const json& object) {
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return {};
  auto rv = meta->find("resourceVersion");
  return rv != meta->end() && rv->is_string() ? rv->get<std::string>() : std::string();
}

std::string object_key(const json& object) {
  const json& meta = object.at("metadata");
  std::string ns = meta.value("namespace", "");
  std::string name = meta.value("name", "");
  return ns.empty() ? name : ns + "/" + name;
}

namespace {

// Appends `key=value` to a path, with '?' or '&' as needed; empty values are left out.
void add_query(std::string& path, const std::string& key, const std::string& value) {
  if (value.empty()) return;
  path += path.find('?') == std::string::npos ? '?' : '&';
  path += key + "=" + url_encode(value);
}

std::string patch_content_type(PatchType type) {
  switch (type) {
    case PatchType::Merge: return "application/merge-patch+json";
    case PatchType::JSON: return "application/json-patch+json";
    case PatchType::Strategic: return "application/strategic-merge-patch+json";
  }
  return "application/merge-patch+json";
}

}  // namespace

Client::Client(ClusterConfig config, HttpOptions options) : http_(std::move(config), std::move(options)) {}

json Client::call(const std::string& method, const std::string& path, const std::string& body,
                  const std::string& content_type, const FieldMask* answer) {
  HttpRequest req;
  req.method = method;
  req.path = path;
  req.body = body;
  req.content_type = content_type;
  req.timeout = http_.options().request_timeout;
  HttpResponse resp = http_.send(req);
  if (resp.status < 200 || resp.status >= 300) throw_status(method + " " + path, resp);
  if (resp.body.empty()) return json::object();
  json parsed = answer != nullptr ? answer->parse(resp.body) : json::parse(resp.body, nullptr, false);
  if (parsed.is_discarded()) throw KubeError(method + " " + path + ": the answer is not JSON", resp.status);
  return parsed;
}

json Client::get(const std::string& path) { return call("GET", path); }
json Client::create(const std::string& collection_path, const json& object) {
  return call("POST", collection_path, json_text(object));
}
json Client::update(const std::string& path, const json& object) { return call("PUT", path, json_text(object)); }
json Client::patch(const std::string& path, const json& patch, const std::string& content_type) {
  return call("PATCH", path, json_text(patch), content_type);
}

bool Client::remove(const std::string& path, const DeleteOptions& options) {
  json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (!options.propagation.empty()) body["propagationPolicy"] = options.propagation;
  if (options.grace_period_seconds) body["gracePeriodSeconds"] = *options.grace_period_seconds;
  if (!options.precondition_uid.empty()) body["preconditions"]["uid"] = options.precondition_uid;
  if (!options.precondition_resource_version.empty())
    body["preconditions"]["resourceVersion"] = options.precondition_resource_version;
  try {
    call("DELETE", path, json_text(body));
    return true;
  } catch (const KubeError& e) {
    if (e.http_status() == 404) return false;
    throw;
  }
}

json Client::get(const Resource& r, const std::string& ns, const std::string& name, const std::string& subresource) {
  return get(r.item(ns, name, subresource));
}

ListResult Client::list(const Resource& r, const std::string& ns, const ListOptions& options) {
  ListResult result;
  std::string continue_token;
  do {
    std::string path = r.collection(ns);
    add_query(path, "labelSelector", options.label_selector);
    add_query(path, "fieldSelector", options.field_selector);
    if (options.page_size > 0) add_query(path, "limit", std::to_string(options.page_size));
    add_query(path, "continue", continue_token);
    json page = get(path);
    ++result.pages;
    for (auto& item : page["items"]) {
      // Items of a list carry no kind/apiVersion; restore them so cached objects are whole.
      item["kind"] = r.kind;
      item["apiVersion"] = r.api_version();
      if (options.item_transform) options.item_transform(item);
      result.items.push_back(std::move(item));
    }
    const json& meta = page.value("metadata", json::object());
    result.resource_version = meta.value("resourceVersion", "");
    continue_token = meta.value("continue", "");
  } while (!continue_token.empty());
  return result;
}

json Client::create(const Resource& r, const std::string& ns, const json& object, const FieldMask* answer) {
  return call("POST", r.collection(ns), json_text(object), "application/json", answer);
}

json Client::update(const Resource& r, const json& object, const std::string& subresource) {
  const json& meta = object.at("metadata");
  return update(r.item(meta.value("namespace", ""), meta.at("name").get<std::string>(), subresource), object);
}

json Client::patch(const Resource& r, const std::string& ns, const std::string& name, PatchType type,
                   const json& patch_body, const std::string& subresource) {
  return patch(r.item(ns, name, subresource), patch_body, patch_content_type(type));
}

json Client::apply(const Resource& r, const json& object, const std::string& field_manager, bool force,
                   const std::string& subresource) {
  const json& meta = object.at("metadata");
  std::string path = r.item(meta.value("namespace", ""), meta.at("name").get<std::string>(), subresource);
  add_query(path, "fieldManager", field_manager);
  if (force) add_query(path, "force", "true");
  return call("PATCH", path, json_text(object), "application/apply-patch+yaml");  // JSON is YAML
}

bool Client::remove(const Resource& r, const std::string& ns, const std::string& name, const DeleteOptions& options) {
  return remove(r.item(ns, name), options);
}

void Client::watch(const Resource& r, const std::string& ns, const WatchOptions& options,
                   const std::function<bool(WatchEvent&&)>& on_event, const std::atomic<bool>* cancel) {
  std::string path = r.collection(ns);
  add_query(path, "watch", "1");
  add_query(path, "resourceVersion", options.resource_version);
  add_query(path, "labelSelector", options.label_selector);
  add_query(path, "fieldSelector", options.field_selector);
  if (options.bookmarks) add_query(path, "allowWatchBookmarks", "true");
  if (options.timeout_seconds > 0) add_query(path, "timeoutSeconds", std::to_string(options.timeout_seconds));
  watch(path, on_event, cancel, options.object_fields, std::chrono::seconds(options.idle_timeout_seconds));
}

void Client::watch(const std::string& path, const std::function<bool(WatchEvent&&)>& on_event,
                   const std::atomic<bool>* cancel, std::shared_ptr<const FieldMask> object_fields,
                   std::chrono::seconds idle_timeout) {
  HttpRequest req;
  req.path = path;
  req.timeout = std::chrono::milliseconds(0);
  req.idle_timeout = idle_timeout;
  // The handler runs inside libcurl's write callback: an exception must not unwind through C
  // frames. It is caught here, the stream stopped, and rethrown once curl has returned.
  std::exception_ptr failure;
  WatchDecoder decoder([&](WatchEvent&& ev) {
    try {
      return on_event(std::move(ev));
    } catch (...) {
      failure = std::current_exception();
      return false;
    }
  }, std::move(object_fields));
  HttpResponse resp = http_.stream(req, [&](std::string_view chunk) { return decoder.feed(chunk); }, cancel);
  if (failure) std::rethrow_exception(failure);
  if (resp.status < 200 || resp.status >= 300) throw_status("watch " + path, resp);
  decoder.finish();
  if (failure) std::rethrow_exception(failure);
}

json Client::server_version() { return get("/version"); }

}  // namespace valley::kube
