// Where a kind of object lives in the API: group/version/plural and scope, and the URL paths built
// from them. The kinds Valley uses are declared here once.
#pragma once

#include <string>

#include "operator/kube/error.h"

namespace valley::kube {

// `s` as one segment of a request path: a namespace or an object's name. The API server's own rule
// for names (no "/" or "%", not "." or "..") and nothing a URL reads as syntax, so that a name a
// user wrote (a Secret's, a claim's) can never address another namespace or another kind. Anything
// else throws KubeError 400 Invalid before a request is made.
inline const std::string& path_segment(const std::string& s) {
  bool ok = !s.empty() && s != "." && s != "..";
  for (char c : s) ok = ok && c > 0x20 && c < 0x7f && c != '/' && c != '%' && c != '?' && c != '#' && c != '\\';
  if (!ok) throw KubeError("\"" + s.substr(0, 80) + "\" is not a valid object or namespace name", 400, "Invalid");
  return s;
}

struct Resource {
  std::string group;  // "" for the core group
  std::string version;
  std::string plural;
  std::string kind;
  bool namespaced = true;

  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  // "/api/v1" or "/apis/<group>/<version>"
  std::string base() const { return group.empty() ? "/api/" + version : "/apis/" + group + "/" + version; }
  // The collection, in one namespace (ns non-empty) or across all (ns empty).
  std::string collection(const std::string& ns) const {
    return namespaced && !ns.empty() ? base() + "/namespaces/" + path_segment(ns) + "/" + plural : base() + "/" + plural;
  }
  std::string item(const std::string& ns, const std::string& name, const std::string& subresource = "") const {
    return collection(ns) + "/" + path_segment(name) + (subresource.empty() ? "" : "/" + subresource);
  }
};

namespace resources {
inline const Resource kPods{"", "v1", "pods", "Pod", true};
inline const Resource kNodes{"", "v1", "nodes", "Node", false};
inline const Resource kNamespaces{"", "v1", "namespaces", "Namespace", false};
inline const Resource kServices{"", "v1", "services", "Service", true};
inline const Resource kConfigMaps{"", "v1", "configmaps", "ConfigMap", true};
inline const Resource kSecrets{"", "v1", "secrets", "Secret", true};
inline const Resource kPersistentVolumeClaims{"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true};
inline const Resource kPersistentVolumes{"", "v1", "persistentvolumes", "PersistentVolume", false};
inline const Resource kStorageClasses{"storage.k8s.io", "v1", "storageclasses", "StorageClass", false};
inline const Resource kServiceAccounts{"", "v1", "serviceaccounts", "ServiceAccount", true};
inline const Resource kDeployments{"apps", "v1", "deployments", "Deployment", true};
inline const Resource kNetworkPolicies{"networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", true};
inline const Resource kLeases{"coordination.k8s.io", "v1", "leases", "Lease", true};
inline const Resource kEvents{"events.k8s.io", "v1", "events", "Event", true};
// Karpenter's NodePools: capacity that can be bought (read only).
inline const Resource kNodePools{"karpenter.sh", "v1", "nodepools", "NodePool", false};
inline const Resource kResourceSlices{"resource.k8s.io", "v1", "resourceslices", "ResourceSlice", false};
inline const Resource kResourceClaims{"resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", true};
inline const Resource kResourceClaimTemplates{"resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", true};
inline const Resource kDeviceClasses{"resource.k8s.io", "v1", "deviceclasses", "DeviceClass", false};
inline const Resource kCustomResourceDefinitions{"apiextensions.k8s.io", "v1", "customresourcedefinitions",
                                                 "CustomResourceDefinition", false};
inline const Resource kTrainingTasks{"valley.dev", "v1beta1", "trainingtasks", "TrainingTask", true};
inline const Resource kPricingPolicies{"valley.dev", "v1beta1", "pricingpolicies", "PricingPolicy", false};
inline const Resource kTenants{"valley.dev", "v1beta1", "tenants", "Tenant", false};
}  // namespace resources

}  // namespace valley::kube
