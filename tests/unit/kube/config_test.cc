#include "operator/kube/config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "operator/kube/base64.h"
#include "tests/scratch_dir.h"
#include "operator/kube/error.h"

namespace valley::kube {
namespace {
namespace fs = std::filesystem;

using TempDir = valley::testing::ScratchDir;

std::string kubeconfig(const std::string& cluster_extra, const std::string& user, const std::string& current = "main") {
  return "apiVersion: v1\nkind: Config\ncurrent-context: " + current +
         "\nclusters:\n- name: c1\n  cluster:\n    server: https://127.0.0.1:6443/\n" + cluster_extra +
         "contexts:\n- name: main\n  context: {cluster: c1, user: u1, namespace: team-a}\n"
         "- name: other\n  context: {cluster: c1, user: u2}\n"
         "users:\n- name: u1\n  user:\n" + user + "- name: u2\n  user: {token: second}\n";
}

TEST(Kubeconfig, InlineDataIsDecoded) {
  std::string cfg_text = kubeconfig("    certificate-authority-data: " + base64_encode("CA-PEM") + "\n",
                                    "    client-certificate-data: " + base64_encode("CERT") +
                                        "\n    client-key-data: " + base64_encode("KEY") + "\n");
  auto cfg = parse_kubeconfig(cfg_text, "/nowhere");
  EXPECT_EQ(cfg.server, "https://127.0.0.1:6443");  // trailing slash removed
  EXPECT_EQ(cfg.ca_pem, "CA-PEM");
  EXPECT_EQ(cfg.client_cert_pem, "CERT");
  EXPECT_EQ(cfg.client_key_pem, "KEY");
  EXPECT_EQ(cfg.default_namespace, "team-a");
  EXPECT_TRUE(cfg.bearer_token.empty());
}

TEST(Kubeconfig, RelativeFilesResolveAgainstTheKubeconfigDirectory) {
  TempDir dir;
  dir.write("ca.crt", "CA-FROM-FILE");
  dir.write("u.crt", "CERT-FROM-FILE");
  dir.write("u.key", "KEY-FROM-FILE");
  auto path = dir.write("config", kubeconfig("    certificate-authority: ca.crt\n",
                                             "    client-certificate: u.crt\n    client-key: " + dir.str() + "/u.key\n"));
  auto cfg = load_kubeconfig(path);
  EXPECT_EQ(cfg.ca_pem, "CA-FROM-FILE");
  EXPECT_EQ(cfg.client_cert_pem, "CERT-FROM-FILE");
  EXPECT_EQ(cfg.client_key_pem, "KEY-FROM-FILE");
  EXPECT_NE(cfg.source.find(path), std::string::npos);
}

TEST(Kubeconfig, NamedContextOverridesCurrent) {
  auto cfg = parse_kubeconfig(kubeconfig("", "    token: first\n"), "", "other");
  EXPECT_EQ(cfg.bearer_token, "second");
  EXPECT_EQ(cfg.default_namespace, "default");
}

TEST(Kubeconfig, TokenFileIsKeptAsAPath) {
  auto cfg = parse_kubeconfig(kubeconfig("", "    tokenFile: secrets/token\n"), "/etc/valley");
  EXPECT_EQ(cfg.token_file, "/etc/valley/secrets/token");
}

void expect_error(const std::string& text, const std::string& needle, const std::string& context = "") {
  try {
    parse_kubeconfig(text, "", context, "kubeconfig test.yaml");
    FAIL() << "expected an error containing \"" << needle << "\"";
  } catch (const KubeError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("test.yaml"), std::string::npos) << e.what();
  }
}

TEST(Kubeconfig, ClearErrorsForBadFiles) {
  expect_error("{{{", "not valid YAML");
  expect_error("- a\n- b\n", "expected a mapping");
  expect_error(kubeconfig("", "    token: t\n", "missing"), "no context named \"missing\"");
  expect_error(kubeconfig("", "    token: t\n"), "no context named \"nope\"", "nope");
  expect_error(kubeconfig("    insecure-skip-tls-verify: true\n", "    token: t\n"), "insecure-skip-tls-verify");
  expect_error(kubeconfig("", "    exec: {command: aws}\n"), "exec plugin");
  expect_error(kubeconfig("", "    client-certificate-data: " + base64_encode("C") + "\n"), "without a key");
  expect_error(kubeconfig("", "    client-certificate-data: '%%%'\n    client-key-data: eA==\n"), "not valid base64");
  expect_error("current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\nclusters:\n- name: c\n  cluster: {server: http://h}\n",
               "not https");
}

TEST(Kubeconfig, MissingFileNamesThePath) {
  try {
    load_kubeconfig("/no/such/kubeconfig");
    FAIL();
  } catch (const KubeError& e) {
    EXPECT_NE(std::string(e.what()).find("/no/such/kubeconfig"), std::string::npos);
  }
}

EnvLookup fake_env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(InCluster, ReadsServiceAccountFiles) {
  TempDir dir;
  dir.write("token", "tok\n");
  dir.write("ca.crt", "CA");
  dir.write("namespace", "valley-system\n");
  auto cfg = load_in_cluster({dir.str()}, fake_env({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}}));
  EXPECT_EQ(cfg.server, "https://10.96.0.1:443");
  EXPECT_EQ(cfg.token_file, dir.str() + "/token");
  EXPECT_EQ(cfg.ca_pem, "CA");
  EXPECT_EQ(cfg.default_namespace, "valley-system");
}

TEST(InCluster, BracketsIPv6Hosts) {
  TempDir dir;
  dir.write("token", "tok");
  dir.write("ca.crt", "CA");
  auto cfg = load_in_cluster({dir.str()}, fake_env({{"KUBERNETES_SERVICE_HOST", "fd00::1"}, {"KUBERNETES_SERVICE_PORT", "443"}}));
  EXPECT_EQ(cfg.server, "https://[fd00::1]:443");
}

TEST(InCluster, ErrorsWithoutEnvironmentOrToken) {
  TempDir dir;
  EXPECT_THROW(load_in_cluster({dir.str()}, fake_env({})), KubeError);
  EXPECT_THROW(load_in_cluster({dir.str()}, fake_env({{"KUBERNETES_SERVICE_HOST", "h"}, {"KUBERNETES_SERVICE_PORT", "1"}})), KubeError);
}

TEST(DefaultConfig, PrefersFlagThenKubeconfigEnvThenInCluster) {
  TempDir dir;
  auto a = dir.write("a", kubeconfig("", "    token: from-a\n"));
  auto b = dir.write("b", kubeconfig("", "    token: from-b\n"));
  EXPECT_EQ(load_default(a, "", fake_env({{"KUBECONFIG", b}})).bearer_token, "from-a");
  EXPECT_EQ(load_default("", "", fake_env({{"KUBECONFIG", "/missing:" + b}})).bearer_token, "from-b");
  EXPECT_THROW(load_default("", "", fake_env({{"KUBECONFIG", "/missing"}})), KubeError);
  EXPECT_THROW(load_default("", "", fake_env({{"HOME", dir.str()}})), KubeError);
}

}  // namespace
}  // namespace valley::kube
