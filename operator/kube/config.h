// Where the API server is and how to authenticate to it: loaded from a kubeconfig file (current or
// named context; certificates and keys as files or inline data; bearer token or token file) or from
// the in-cluster service account. TLS is always verified: a kubeconfig asking to skip verification
// is refused, not obeyed. Exec and auth-provider plugins are not supported and say so.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace valley::kube {

struct ClusterConfig {
  std::string server;           // "https://host:port", no trailing slash
  std::string ca_pem;           // PEM of the CA bundle; empty = the system trust store
  std::string tls_server_name;  // SNI/verification name when it differs from the server host
  std::string client_cert_pem;  // client certificate authentication (with client_key_pem)
  std::string client_key_pem;
  std::string bearer_token;     // a fixed token, or
  std::string token_file;       // a token file re-read when it changes (service-account rotation)
  std::string default_namespace = "default";
  std::string source;           // e.g. "kubeconfig /path (context x)" or "in-cluster", for logs
};

// Reads a kubeconfig. `context` empty = the file's current-context. Relative file paths inside are
// resolved against the kubeconfig's directory, as kubectl does. Throws KubeError with the file
// name and the field at fault.
ClusterConfig load_kubeconfig(const std::string& path, const std::string& context = "");

// Parses kubeconfig text; `base_dir` resolves relative paths. Throws KubeError.
ClusterConfig parse_kubeconfig(const std::string& text, const std::string& base_dir,
                               const std::string& context = "", const std::string& origin = "kubeconfig");

struct InClusterPaths {
  std::string dir = "/var/run/secrets/kubernetes.io/serviceaccount";
};
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
std::optional<std::string> process_env(const std::string& name);

// The pod's service account: KUBERNETES_SERVICE_HOST/PORT, token file, CA bundle, namespace.
ClusterConfig load_in_cluster(const InClusterPaths& paths = {}, const EnvLookup& env = process_env);

// What a Kubernetes program is expected to do: an explicit kubeconfig path if given, else $KUBECONFIG
// (first existing file of the list), else in-cluster when KUBERNETES_SERVICE_HOST is set, else
// ~/.kube/config.
ClusterConfig load_default(const std::string& kubeconfig_path, const std::string& context,
                           const EnvLookup& env = process_env);

// Reads a whole file; throws KubeError naming `what` when it cannot.
std::string read_file(const std::string& path, const std::string& what);

}  // namespace valley::kube
