#include "operator/kube/store.h"

#include <gtest/gtest.h>

namespace valley::kube {
namespace {
using json = nlohmann::json;

ObjectPtr pod(const std::string& ns, const std::string& name, const std::string& node, const std::string& owner,
              json labels = json::object()) {
  json p = {{"metadata", {{"namespace", ns}, {"name", name}, {"labels", labels}}}, {"spec", json::object()}};
  if (!node.empty()) p["spec"]["nodeName"] = node;
  if (!owner.empty()) p["metadata"]["ownerReferences"] = {{{"uid", owner}, {"kind", "TrainingTask"}}};
  return std::make_shared<const json>(p);
}

TEST(Store, IndexesFollowUpdatesAndDeletes) {
  Store s;
  add_standard_indexes(s);
  s.upsert("a/p1", pod("a", "p1", "n1", "u1", {{"valley.dev/task", "t1"}}));
  s.upsert("a/p2", pod("a", "p2", "n1", "u1", {{"valley.dev/task", "t1"}}));
  s.upsert("b/p3", pod("b", "p3", "", "u2"));
  EXPECT_EQ(s.size(), 3u);
  EXPECT_EQ(s.by_index(index::kNamespace, "a").size(), 2u);
  EXPECT_EQ(s.by_index(index::kOwnerUid, "u1").size(), 2u);
  EXPECT_EQ(s.by_index(index::kNodeName, "n1").size(), 2u);
  EXPECT_EQ(s.by_index(index::kLabel, "valley.dev/task=t1").size(), 2u);

  // p1 moves to another node and loses its label: the old index entries go.
  auto old = s.upsert("a/p1", pod("a", "p1", "n2", "u1"));
  ASSERT_TRUE(old);
  EXPECT_EQ((*old)["spec"]["nodeName"], "n1");
  EXPECT_EQ(s.by_index(index::kNodeName, "n1").size(), 1u);
  EXPECT_EQ(s.by_index(index::kNodeName, "n2").size(), 1u);
  EXPECT_EQ(s.by_index(index::kLabel, "valley.dev/task=t1").size(), 1u);

  EXPECT_TRUE(s.erase("a/p2"));
  EXPECT_FALSE(s.erase("a/p2"));
  EXPECT_TRUE(s.by_index(index::kNodeName, "n1").empty());
  EXPECT_EQ(s.by_index(index::kOwnerUid, "u1").size(), 1u);
  EXPECT_TRUE(s.by_index("no-such-index", "x").empty());
}

TEST(Store, MalformedObjectsAreCachedWithoutIndexEntries) {
  Store s;
  add_standard_indexes(s);
  s.upsert("x", std::make_shared<const json>(json{{"metadata", "not an object"}, {"spec", 3}}));
  s.upsert("y", std::make_shared<const json>(json::object()));
  EXPECT_EQ(s.size(), 2u);
  EXPECT_TRUE(s.by_index(index::kNamespace, "").empty());
}

TEST(Store, ReadersKeepTheirSnapshot) {
  Store s;
  s.upsert("a/p", pod("a", "p", "n1", ""));
  ObjectPtr held = s.get("a/p");
  s.upsert("a/p", pod("a", "p", "n2", ""));
  EXPECT_EQ((*held)["spec"]["nodeName"], "n1");
  EXPECT_EQ((*s.get("a/p"))["spec"]["nodeName"], "n2");
}

// A new version that changes nothing the cache keeps (a node's heartbeat once the transform drops
// it) replaces the cached one in place; any other change does not.
TEST(Store, AVersionThatChangesNothingButItsResourceVersionReplacesInPlace) {
  const json a = {{"metadata", {{"name", "n"}, {"resourceVersion", "1"}, {"labels", {{"x", "1"}}}}}, {"status", {{"ready", true}}}};
  json b = a;
  b["metadata"]["resourceVersion"] = "2";
  EXPECT_TRUE(same_but_resource_version(a, b));
  json label = b;
  label["metadata"]["labels"]["x"] = "2";
  EXPECT_FALSE(same_but_resource_version(a, label));
  json status = b;
  status["status"]["ready"] = false;
  EXPECT_FALSE(same_but_resource_version(a, status));
  json extra = b;
  extra["spec"] = json::object();
  EXPECT_FALSE(same_but_resource_version(a, extra));
  json no_version = b;
  no_version["metadata"].erase("resourceVersion");
  EXPECT_FALSE(same_but_resource_version(a, no_version));
  EXPECT_FALSE(same_but_resource_version(json::array(), a));

  Store s;
  add_standard_indexes(s);
  s.upsert("n", std::make_shared<const json>(a));
  EXPECT_TRUE(s.replace_if_same("n", std::make_shared<const json>(b)));
  EXPECT_EQ(s.get("n")->at("metadata").at("resourceVersion"), "2");
  EXPECT_EQ(s.by_index(index::kLabel, "x=1").size(), 1u);
  EXPECT_FALSE(s.replace_if_same("n", std::make_shared<const json>(label)));
  EXPECT_EQ(s.get("n")->at("metadata").at("resourceVersion"), "2");  // unchanged: the caller upserts
  EXPECT_FALSE(s.replace_if_same("missing", std::make_shared<const json>(b)));
}

}  // namespace
}  // namespace valley::kube
