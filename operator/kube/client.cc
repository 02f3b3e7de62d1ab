#include "operator/kube/client.h"

#include <cctype>

#include "operator/kube/error.h"

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

Client::Client(ClusterConfig config, HttpOptions options) : http_(std::move(config), std::move(options)) {}

json Client::call(const std::string& method, const std::string& path, const std::string& body,
                  const std::string& content_type) {
  HttpRequest req;
  req.method = method;
  req.path = path;
  req.body = body;
  req.content_type = content_type;
  HttpResponse resp = http_.send(req);
  if (resp.status < 200 || resp.status >= 300) throw_status(method + " " + path, resp);
  if (resp.body.empty()) return json::object();
  json parsed = json::parse(resp.body, nullptr, false);
  if (parsed.is_discarded()) throw KubeError(method + " " + path + ": the answer is not JSON", resp.status);
  return parsed;
}

json Client::get(const std::string& path) { return call("GET", path); }
json Client::create(const std::string& collection_path, const json& object) {
  return call("POST", collection_path, object.dump());
}
json Client::update(const std::string& path, const json& object) { return call("PUT", path, object.dump()); }
json Client::patch(const std::string& path, const json& patch, const std::string& content_type) {
  return call("PATCH", path, patch.dump(), content_type);
}

void Client::remove(const std::string& path, const std::string& propagation) {
  json options = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (!propagation.empty()) options["propagationPolicy"] = propagation;
  try {
    call("DELETE", path, options.dump());
  } catch (const KubeError& e) {
    if (e.http_status() != 404) throw;
  }
}

json Client::server_version() { return get("/version"); }

void Client::watch(const std::string& path, const std::function<bool(const WatchEvent&)>& on_event,
                   const std::atomic<bool>* cancel) {
  HttpRequest req;
  req.path = path;
  req.timeout = std::chrono::milliseconds(0);
  auto on_line = [&](std::string_view line) {
    json frame = json::parse(line, nullptr, false);
    if (!frame.is_object()) return true;  // not a watch frame; the server sends none such
    WatchEvent ev{frame.value("type", ""), frame.value("object", json::object())};
    return on_event(ev);
  };
  HttpResponse resp = http_.stream(req, on_line, cancel);
  if (resp.status != 0 && (resp.status < 200 || resp.status >= 300)) throw_status("watch " + path, resp);
}

}  // namespace valley::kube
