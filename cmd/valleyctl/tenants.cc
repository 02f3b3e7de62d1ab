// valleyctl tenants: each Tenant as Valley keeps it.
#include "cmd/valleyctl/common.h"
#include "cmd/valleyctl/table.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>

#include "controllers/inputs/candidates.h"
#include "controllers/cost/engine.h"
#include "controllers/inputs/planner_config.h"
#include "controllers/cost/report.h"
#include "controllers/planner/scaling.h"
#include "controllers/inputs/snapshot.h"
#include "controllers/api/seed.h"
#include "controllers/api/spec.h"
#include "controllers/api/tenant.h"
#include "controllers/tenancy/tenants.h"
#include "operator/kube/json_fields.h"
#include "operator/duration.h"
#include "operator/kube/resource.h"
#include "operator/yaml_json.h"

#include "operator/flags.h"
#include "operator/kube/client.h"
#include "operator/kube/error.h"
#include "valley/version.h"

namespace valley::ctl {

// The Tenants as Valley keeps them: what each owns (as Valley resolves it, when namespaces may be
// listed), uses, borrows, lends and spends, and its tasks still waiting.
int cmd_tenants(const valley::Flags& flags) {
  return with_cluster([&] {
    std::string ns;
    auto client = connect(flags, &ns);
    auto items = client->list(valley::kube::resources::kTenants, "").items;
    if (flags.get("output") == "json" || flags.get("output") == "yaml") {
      print(flags, json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}});
      return 0;
    }
    std::vector<valley::tenancy::TenantObject> tenants;
    for (const auto& t : items)
      if (auto parsed = valley::api::parse_tenant(t); parsed.spec) {
        valley::tenancy::TenantObject o;
        o.spec = *parsed.spec;
        o.created = valley::kube::time_at(valley::kube::object_at(t, "metadata"), "creationTimestamp").value_or(valley::kube::SystemTime{});
        tenants.push_back(std::move(o));
      }
    std::map<std::string, std::vector<std::string>> owned;  // tenant -> namespaces
    bool resolved = false;
    try {
      std::map<std::string, std::map<std::string, std::string>> labels;
      for (const auto& n : client->list(valley::kube::resources::kNamespaces, "").items)
        labels[n["metadata"].value("name", "")] = valley::kube::labels_of(n);
      for (const auto& [n, tenant] : valley::tenancy::assign_namespaces(tenants, labels).owner) owned[tenant].push_back(n);
      resolved = true;
    } catch (const valley::kube::KubeError&) {  // may not list namespaces: what each spec names
      for (const auto& t : tenants) owned[t.spec.name] = t.spec.namespaces;
    }
    Table table({"TENANT", resolved ? "NAMESPACES" : "NAMESPACES (listed)", "GPUS", "BORROWED", "LENT", "WEIGHT", "SHARE", "HELD/FAIR",
                 "SPEND (PERIOD)", "WAITING", "STATUS"});
    for (const auto& t : items) {
      const std::string name = t["metadata"].value("name", "");
      const json st = t.value("status", json::object());
      std::string namespaces;
      for (const auto& n : owned[name]) namespaces += (namespaces.empty() ? "" : ",") + n;
      if (namespaces.size() > 28 && owned[name].size() > 1)  // a long list: the first, and how many more
        namespaces = owned[name].front() + ",+" + std::to_string(owned[name].size() - 1);
      std::string status = "Ready";
      for (const auto& c : valley::kube::array_at(st, "conditions")) {
        const std::string type = valley::kube::string_at(c, "type"), value = valley::kube::string_at(c, "status");
        if ((type == "Ready" && value != "True") || (type == "BudgetExhausted" && value == "True"))
          status = valley::kube::string_at(c, "reason") + ": " + valley::kube::string_at(c, "message");
      }
      if (st.empty()) status = "not yet reconciled by Valley";
      const json spend = valley::kube::object_at(st, "spend");
      const std::string spent = valley::kube::string_at(spend, "summary").empty()
                                    ? "-"
                                    : valley::kube::string_at(spend, "summary") + " (" + valley::kube::string_at(spend, "period") + ")";
      auto text = [&](const char* k) { return st.contains(k) && st[k].is_string() ? st[k].get<std::string>() : std::string("-"); };
      // The part of its fair share it held over about the last half-life (fair share now in brackets).
      const json fair = valley::kube::object_at(st, "fairShare");
      const std::string held_of_fair = valley::kube::string_at(fair, "heldOfFair").empty()
                                           ? "-"
                                           : valley::kube::string_at(fair, "heldOfFair") + " (" + valley::kube::string_at(fair, "fairGpus") + ")";
      table.add({name, namespaces.empty() ? "-" : namespaces, text("gpus"), text("borrowed"), text("lent"),
                 t.value("spec", json::object()).value("weight", "1"), text("share"), held_of_fair, spent,
                 std::to_string(valley::kube::int_at(st, "waitingTasks").value_or(0)), status});
    }
    if (items.empty())
      std::cout << "no Tenants\n";
    else
      table.print(std::cout);
    return 0;
  });
}


}  // namespace valley::ctl
