#include "operator/kube/config.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "operator/kube/base64.h"
#include "operator/kube/error.h"

namespace valley::kube {
namespace fs = std::filesystem;

std::optional<std::string> process_env(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

std::string read_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw KubeError("cannot read " + what + " " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace {

std::string strip_trailing_slash(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// Finds the entry named `name` in a kubeconfig list like `clusters: [{name, cluster: {...}}]`.
YAML::Node find_named(const YAML::Node& list, const std::string& name, const std::string& list_name,
                      const std::string& item_key, const std::string& origin) {
  if (list && list.IsSequence()) {
    for (const auto& entry : list) {
      if (entry["name"] && entry["name"].as<std::string>() == name) {
        if (!entry[item_key] || !entry[item_key].IsMap())
          throw KubeError(origin + ": " + list_name + " entry \"" + name + "\" has no " + item_key);
        return entry[item_key];
      }
    }
  }
  throw KubeError(origin + ": no " + item_key + " named \"" + name + "\" in " + list_name);
}

std::string str(const YAML::Node& map, const std::string& key) {
  const YAML::Node v = map[key];
  if (!v || v.IsNull()) return {};
  return v.as<std::string>();
}

// `<key>-data` (base64, inline) or `<key>` (a file, relative to the kubeconfig's directory).
std::string data_or_file(const YAML::Node& map, const std::string& key, const std::string& base_dir,
                         const std::string& origin) {
  if (std::string data = str(map, key + "-data"); !data.empty()) {
    auto decoded = base64_decode(data);
    if (!decoded) throw KubeError(origin + ": " + key + "-data is not valid base64");
    return *decoded;
  }
  if (std::string file = str(map, key); !file.empty()) {
    fs::path p(file);
    if (p.is_relative() && !base_dir.empty()) p = fs::path(base_dir) / p;
    return read_file(p.string(), origin + " " + key);
  }
  return {};
}

}  // namespace

ClusterConfig parse_kubeconfig(const std::string& text, const std::string& base_dir,
                               const std::string& context, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw KubeError(origin + ": not valid YAML: " + e.what());
  }
  if (!root || !root.IsMap()) throw KubeError(origin + ": not a kubeconfig (expected a mapping)");

  try {
    std::string context_name = context.empty() ? str(root, "current-context") : context;
    if (context_name.empty()) throw KubeError(origin + ": no current-context and no context given");
    YAML::Node ctx = find_named(root["contexts"], context_name, "contexts", "context", origin);
    std::string cluster_name = str(ctx, "cluster");
    std::string user_name = str(ctx, "user");
    if (cluster_name.empty()) throw KubeError(origin + ": context \"" + context_name + "\" names no cluster");

    ClusterConfig cfg;
    cfg.source = origin + " (context " + context_name + ")";
    if (std::string ns = str(ctx, "namespace"); !ns.empty()) cfg.default_namespace = ns;

    YAML::Node cluster = find_named(root["clusters"], cluster_name, "clusters", "cluster", origin);
    cfg.server = strip_trailing_slash(str(cluster, "server"));
    if (cfg.server.empty()) throw KubeError(origin + ": cluster \"" + cluster_name + "\" has no server");
    if (cfg.server.rfind("https://", 0) != 0)
      throw KubeError(origin + ": cluster \"" + cluster_name + "\" server " + cfg.server +
                      " is not https; Valley talks to the API server over TLS only");
    if (cluster["insecure-skip-tls-verify"] && cluster["insecure-skip-tls-verify"].as<bool>())
      throw KubeError(origin + ": cluster \"" + cluster_name +
                      "\" sets insecure-skip-tls-verify; Valley always verifies the API server");
    cfg.ca_pem = data_or_file(cluster, "certificate-authority", base_dir, origin);
    cfg.tls_server_name = str(cluster, "tls-server-name");

    if (!user_name.empty()) {
      YAML::Node user = find_named(root["users"], user_name, "users", "user", origin);
      if (user["exec"]) throw KubeError(origin + ": user \"" + user_name + "\" uses an exec plugin, which Valley does not support");
      if (user["auth-provider"])
        throw KubeError(origin + ": user \"" + user_name + "\" uses an auth-provider, which Valley does not support");
      cfg.client_cert_pem = data_or_file(user, "client-certificate", base_dir, origin);
      cfg.client_key_pem = data_or_file(user, "client-key", base_dir, origin);
      if (cfg.client_cert_pem.empty() != cfg.client_key_pem.empty())
        throw KubeError(origin + ": user \"" + user_name + "\" has a client certificate without a key or a key without a certificate");
      cfg.bearer_token = str(user, "token");
      if (std::string tf = str(user, "tokenFile"); !tf.empty()) {
        fs::path p(tf);
        if (p.is_relative() && !base_dir.empty()) p = fs::path(base_dir) / p;
        cfg.token_file = p.string();
      }
    }
    return cfg;
  } catch (const YAML::Exception& e) {
    throw KubeError(origin + ": malformed kubeconfig: " + e.what());
  }
}

ClusterConfig load_kubeconfig(const std::string& path, const std::string& context) {
  std::string text = read_file(path, "kubeconfig");
  return parse_kubeconfig(text, fs::path(path).parent_path().string(), context, "kubeconfig " + path);
}

ClusterConfig load_in_cluster(const InClusterPaths& paths, const EnvLookup& env) {
  auto host = env("KUBERNETES_SERVICE_HOST");
  auto port = env("KUBERNETES_SERVICE_PORT");
  if (!host || host->empty() || !port || port->empty())
    throw KubeError("in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
  ClusterConfig cfg;
  std::string h = host->find(':') != std::string::npos ? "[" + *host + "]" : *host;  // IPv6
  cfg.server = "https://" + h + ":" + *port;
  cfg.token_file = paths.dir + "/token";
  // Fail now, not at the first request, if the token is not mounted.
  (void)read_file(cfg.token_file, "service-account token");
  cfg.ca_pem = read_file(paths.dir + "/ca.crt", "service-account CA bundle");
  if (fs::exists(paths.dir + "/namespace")) cfg.default_namespace = trim(read_file(paths.dir + "/namespace", "namespace"));
  cfg.source = "in-cluster service account";
  return cfg;
}

ClusterConfig load_default(const std::string& kubeconfig_path, const std::string& context, const EnvLookup& env) {
  if (!kubeconfig_path.empty()) return load_kubeconfig(kubeconfig_path, context);
  if (auto list = env("KUBECONFIG"); list && !list->empty()) {
    std::stringstream ss(*list);
    std::string item;
    while (std::getline(ss, item, ':')) {
      if (!item.empty() && fs::exists(item)) return load_kubeconfig(item, context);
    }
    throw KubeError("KUBECONFIG=" + *list + " names no existing file");
  }
  if (auto host = env("KUBERNETES_SERVICE_HOST"); host && !host->empty()) return load_in_cluster({}, env);
  if (auto home = env("HOME"); home && fs::exists(*home + "/.kube/config")) return load_kubeconfig(*home + "/.kube/config", context);
  throw KubeError("no Kubernetes configuration: pass --kubeconfig, set KUBECONFIG, or run in a cluster");
}

}  // namespace valley::kube
