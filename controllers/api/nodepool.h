// Capacity that can be bought: Karpenter NodePools (karpenter.sh/v1) and the instance types a cloud
// offers them (the catalogue Karpenter's kwok provider reads from INSTANCE_TYPES_FILE_PATH; on a
// real cloud, the shapes of the instance types the NodePools name, in the same format). Parsed
// purely from the objects; what cannot be used says why instead of throwing.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace valley::api {

using json = nlohmann::json;

// The well-known labels Karpenter puts on the nodes it launches.
namespace karpenter {
inline constexpr const char* kNodePool = "karpenter.sh/nodepool";
inline constexpr const char* kCapacityType = "karpenter.sh/capacity-type";
inline constexpr const char* kInstanceType = "node.kubernetes.io/instance-type";
inline constexpr const char* kZone = "topology.kubernetes.io/zone";
inline constexpr const char* kArch = "kubernetes.io/arch";
inline constexpr const char* kOs = "kubernetes.io/os";
// A pod with this annotation is not moved by Karpenter's voluntary disruption (consolidation,
// drift, expiry); spot interruptions still take its node.
inline constexpr const char* kDoNotDisrupt = "karpenter.sh/do-not-disrupt";
}  // namespace karpenter

// One requirement of a NodePool's template or an offering: In, NotIn, Exists, DoesNotExist, Gt, Lt.
struct NodeRequirement {
  std::string key, op;
  std::vector<std::string> values;
};

struct NodePoolTaint {
  std::string key, value, effect;
};

struct NodePool {
  std::string name;
  std::map<std::string, std::string> labels;  // spec.template.metadata.labels
  std::vector<NodeRequirement> requirements;  // spec.template.spec.requirements
  std::vector<NodePoolTaint> taints;          // spec.template.spec.taints (startupTaints go before pods bind)
  // spec.limits: resource -> quantity, in Node::room's units for cpu (thousandths), memory and
  // ephemeral-storage (bytes), whole units for GPUs and pods. A resource not listed is not limited.
  std::map<std::string, int64_t> limits;
  std::string consolidation_policy;  // WhenEmpty or WhenEmptyOrUnderutilized
  std::optional<int64_t> consolidate_after_seconds;  // nullopt: Never
  int weight = 0;
  bool deleting = false;
  // status.resources: what Karpenter counts against the limits, its NodeClaims' capacity (those being
  // launched included), in the units of `limits`. A quantity that does not parse is left out.
  std::map<std::string, int64_t> in_use;
};

// The NodePool, or why it cannot be read (a quantity that does not parse).
struct NodePoolRead {
  std::optional<NodePool> pool;
  std::string error;
};
NodePoolRead read_node_pool(const json& object);

struct Offering {
  std::string capacity_type;  // on-demand, spot, reserved
  std::string zone;           // "" : any
  int64_t price_micros = 0;   // per node-hour, as the cloud lists it
  bool available = true;
};

struct InstanceType {
  std::string name, architecture = "amd64";
  std::vector<std::string> operating_systems = {"linux"};
  std::map<std::string, std::string> resources;  // as the node's allocatable will say it ("nvidia.com/gpu": "8")
  std::vector<Offering> offerings;
};

// The catalogue (a JSON array of instance types), or why it cannot be read.
struct Catalogue {
  std::vector<InstanceType> types;
  std::string error;
};
Catalogue read_catalogue(const json& document);

// A node a NodePool has not bought yet, as the planner names it: "<pool>:<instance-type>:<capacity-type>:<n>",
// which no real node can be called (':' is not allowed in a node name).
struct ProvisionTarget {
  std::string pool, instance_type, capacity_type;
};
std::string provisionable_name(const ProvisionTarget& target, int n);
// Where such a node comes from, read back from its name; nullopt for a real node's name.
std::optional<ProvisionTarget> provision_target(const std::string& node_name);
inline bool is_provisionable(const std::string& node_name) { return node_name.find(':') != std::string::npos; }

// Whether labels of a node satisfy one requirement (a key the labels lack fails In and Exists).
bool satisfies(const std::map<std::string, std::string>& labels, const NodeRequirement& r);

}  // namespace valley::api
