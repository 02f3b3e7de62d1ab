// valleyctl migrate-storage: after an upgrade whose CRDs store a newer version, rewrites every
// object of Valley's kinds so etcd holds it in that version, then records in each CRD's
// status.storedVersions that no other version is stored. Only then may a later release stop
// serving the old version. The same steps as kube-storage-version-migrator, for three kinds.
//
// Contract: an object is rewritten by an unchanged PUT (the API server re-encodes it in the storage
// version; a 409 means someone else wrote it meanwhile, which re-encoded it too; a 404 means it is
// gone). storedVersions is narrowed only when every object of the kind was rewritten; a refusal
// leaves it as it was and names the object, so running the command again is always safe.
#include <iostream>
#include <string>
#include <vector>

#include "cmd/valleyctl/common.h"
#include "operator/kube/resource.h"

namespace valley::ctl {
namespace {

std::string crd_path(const kube::Resource& r) {
  return kube::resources::kCustomResourceDefinitions.item("", r.plural + "." + r.group);
}

std::string storage_version(const json& crd) {
  for (const auto& v : crd.value("spec", json::object()).value("versions", json::array()))
    if (v.value("storage", false)) return v.value("name", "");
  return "";
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return "[" + out + "]";
}

// Rewrites the objects of `kind` (at its storage version); returns how many could not be.
int rewrite_all(kube::Client& client, const kube::Resource& kind, bool dry_run, int* rewritten) {
  int refused = 0;
  for (const auto& object : client.list(kind, "").items) {
    const std::string key = kube::object_key(object);
    if (dry_run) {
      ++*rewritten;
      continue;
    }
    try {
      client.update(kind, object);
      ++*rewritten;
    } catch (const kube::KubeError& e) {
      if (e.http_status() == 409 || e.http_status() == 404) {
        ++*rewritten;  // written by someone else since the list (so re-encoded), or deleted
      } else {
        std::cerr << "valleyctl: " << kind.plural << " " << key << " not rewritten: " << e.what() << "\n";
        ++refused;
      }
    }
  }
  return refused;
}

// One kind: 0 when its objects are stored only in the storage version afterwards.
int migrate(kube::Client& client, const kube::Resource& served, bool dry_run) {
  const json crd = client.get(crd_path(served));
  const std::string storage = storage_version(crd);
  const auto stored = crd.value("status", json::object()).value("storedVersions", std::vector<std::string>{});
  if (storage.empty()) {
    std::cerr << "valleyctl: " << crd_path(served) << " names no storage version\n";
    return 1;
  }
  if (stored == std::vector<std::string>{storage}) {
    std::cout << served.plural << ": stored only as " << storage << ", nothing to do\n";
    return 0;
  }
  kube::Resource kind = served;
  kind.version = storage;
  int rewritten = 0;
  if (int refused = rewrite_all(client, kind, dry_run, &rewritten); refused > 0) {
    std::cout << served.plural << ": " << refused << " objects not rewritten; storedVersions left at " << joined(stored) << "\n";
    return 1;
  }
  if (!dry_run)
    client.patch(crd_path(served) + "/status", json{{"status", {{"storedVersions", {storage}}}}});
  std::cout << served.plural << ": " << rewritten << " objects " << (dry_run ? "would be " : "") << "rewritten as " << storage
            << "; storedVersions " << joined(stored) << " -> [" << storage << "]" << (dry_run ? " (dry run)" : "") << "\n";
  return 0;
}

}  // namespace

int cmd_migrate_storage(const Flags& flags) {
  return with_cluster([&] {
    auto client = connect(flags, nullptr);
    int failed = 0;
    for (const auto* kind : {&kube::resources::kTrainingTasks, &kube::resources::kTenants, &kube::resources::kPricingPolicies})
      failed += migrate(*client, *kind, flags.get_bool("dry-run"));
    return failed == 0 ? 0 : 1;
  });
}

}  // namespace valley::ctl
