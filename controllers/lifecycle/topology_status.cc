#include "controllers/lifecycle/topology_status.h"

#include <set>

namespace valley::lifecycle {

using json = nlohmann::json;

namespace {
std::string joined(const json& domains, const char* sep) {
  std::string out;
  for (const auto& d : domains) out += (out.empty() ? "" : sep) + d.get<std::string>();
  return out;
}
}  // namespace

json topology_status(const std::vector<std::string>& levels, const std::optional<api::TaskSpec::Topology>& rule,
                     const std::vector<std::vector<std::string>>& worker_domains) {
  json rows = json::array();
  std::vector<bool> all_labelled;
  for (size_t l = 0; l < levels.size(); ++l) {
    std::set<std::string> domains;
    bool labelled = !worker_domains.empty();
    for (const auto& w : worker_domains) {
      const std::string d = l < w.size() ? w[l] : "";
      if (d.empty()) labelled = false;
      else domains.insert(d);
    }
    if (domains.empty()) continue;
    rows.push_back({{"level", levels[l]}, {"domains", json(std::vector<std::string>(domains.begin(), domains.end()))}});
    all_labelled.push_back(labelled);
  }
  if (rows.empty()) return nullptr;
  const json* shown = nullptr;
  for (const auto& r : rows)
    if (rule && r["level"] == rule->level) shown = &r;
  for (size_t x = 0; !rule && !shown && x < rows.size(); ++x)
    if (all_labelled[x] && rows[x]["domains"].size() == 1) shown = &rows[x];
  if (!shown && !rule) shown = &rows.back();
  json out = {{"levels", rows}};
  out["summary"] = shown ? (*shown)["level"].get<std::string>() + " " + joined((*shown)["domains"], ",") : "";
  return out;
}

std::string spread_wider(const json& status, const std::optional<api::TaskSpec::Topology>& rule, int workers) {
  if (!rule || !status.is_object()) return "";
  for (const auto& r : status.value("levels", json::array())) {
    if (r.value("level", "") != rule->level || r["domains"].size() < 2) continue;
    return "its " + std::to_string(workers) + " workers run in " + std::to_string(r["domains"].size()) + " " + rule->level +
           " domains (" + joined(r["domains"], ", ") + "): no " + rule->level + " had room for all of them (spec.topology." +
           (rule->required ? "required" : "preferred") + ": " + rule->level + ")";
  }
  return "";
}

}  // namespace valley::lifecycle
