// spec.topology as parsed, status.topology as reported, and the Event for a spread wider than preferred.
#include "controllers/lifecycle/topology_status.h"

#include <gtest/gtest.h>

#include "controllers/lifecycle/lifecycle.h"
#include "tests/unit/controllers/lifecycle_fixtures.h"

namespace valley::lifecycle {
namespace {
using namespace fixtures;

TEST(TopologySpec, TakesExactlyOneOfRequiredAndPreferred) {
  auto parsed = api::parse_task(task_object({{"topology", {{"required", "rack"}}}}));
  ASSERT_TRUE(parsed.spec);
  ASSERT_TRUE(parsed.spec->topology);
  EXPECT_EQ(parsed.spec->topology->level, "rack");
  EXPECT_TRUE(parsed.spec->topology->required);
  parsed = api::parse_task(task_object({{"topology", {{"preferred", "block"}}}}));
  ASSERT_TRUE(parsed.spec && parsed.spec->topology);
  EXPECT_FALSE(parsed.spec->topology->required);
  for (const json& bad : {json{{"required", "rack"}, {"preferred", "zone"}}, json::object(), json{{"preferred", ""}}}) {
    parsed = api::parse_task(task_object({{"topology", bad}}));
    ASSERT_EQ(parsed.errors.size(), 1u) << bad.dump();
    EXPECT_EQ(parsed.errors[0].rfind("spec.topology: ", 0), 0u) << parsed.errors[0];
  }
}

TEST(TopologyStatus, NamesTheRulesLevelElseTheNarrowestHoldingAllInOneDomain) {
  const std::vector<std::string> levels = {"clique", "rack", "zone"};
  const std::vector<std::vector<std::string>> rows = {{"c1", "r1", "z"}, {"c2", "r1", "z"}, {"", "r1", "z"}};
  json st = topology_status(levels, std::nullopt, rows);
  EXPECT_EQ(st["summary"], "rack r1");  // the cliques: two, and one node is in none
  ASSERT_EQ(st["levels"].size(), 3u);
  EXPECT_EQ(st["levels"][0], (json{{"level", "clique"}, {"domains", {"c1", "c2"}}}));
  EXPECT_EQ(topology_status(levels, api::TaskSpec::Topology{"clique", false}, rows)["summary"], "clique c1,c2");
  // Spread at every level: the widest is named.
  st = topology_status(levels, std::nullopt, {{"c1", "r1", "z1"}, {"c2", "r2", "z2"}});
  EXPECT_EQ(st["summary"], "zone z1,z2");
  // Nothing labelled: nothing to say.
  EXPECT_TRUE(topology_status(levels, std::nullopt, {{"", "", ""}}).is_null());
  EXPECT_TRUE(topology_status({}, std::nullopt, {{}}).is_null());
}

TEST(TopologyStatus, ARunningTaskSpreadWiderThanPreferredSaysSoOnce) {
  auto pods = running_pods();
  pods[0].node = "n1";
  pods[1].node = "n2";
  pods[2].node = "n1";
  json st = running_status();
  st["phase"] = "Admitted";
  Observed o = observe(task_object({{"topology", {{"preferred", "rack"}}}}, st), pods);
  o.topology = {"rack"};
  o.nodes_known = true;
  o.nodes = {{"n1", NodeView{}}, {"n2", NodeView{}}};
  o.nodes["n1"].domains = {"r1"};
  o.nodes["n2"].domains = {"r2"};
  Decision d = decide(o);
  ASSERT_EQ(d.status["phase"], "Running");
  EXPECT_EQ(d.status["topology"]["summary"], "rack r1,r2");
  int told = 0;
  for (const auto& e : d.events)
    if (e.reason == "SpreadWider") {
      ++told;
      EXPECT_EQ(e.type, "Warning");
      EXPECT_EQ(e.note, "its 2 workers run in 2 rack domains (r1, r2): no rack had room for all of them (spec.topology.preferred: rack)");
    }
  EXPECT_EQ(told, 1);
  // Running on, in the same place: not told again.
  Observed again = o;
  again.task["status"] = d.status;
  again.parsed = api::parse_task(again.task);
  for (const auto& e : decide(again).events) EXPECT_NE(e.reason, "SpreadWider");
  // In one rack: nothing to tell.
  o.nodes["n2"].domains = {"r1"};
  for (const auto& e : decide(o).events) EXPECT_NE(e.reason, "SpreadWider");
}

}  // namespace
}  // namespace valley::lifecycle
