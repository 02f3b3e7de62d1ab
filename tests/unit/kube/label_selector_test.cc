#include "operator/kube/label_selector.h"

#include <gtest/gtest.h>

namespace valley::kube {
namespace {

TEST(LabelSelector, TheApiServersSyntaxIsAccepted) {
  for (const char* s : {"", "pool", "!valley.dev/fleet", "pool=a100", "pool==a100", "pool!=a100", "valley.dev/pool=a100-od,!dedicated",
                        "zone in (zone-a, zone-b)", "zone notin (zone-a)", "tier in (a,b),pool=x", "key=", " pool = a100 "})
    EXPECT_TRUE(valid_label_selector(s)) << s;
}

TEST(LabelSelector, WhatTheApiServerWouldRefuseIsRefused) {
  for (const char* s : {"=a100", "pool=a b", "pool in a,b", "pool in (a", "pool)", "pool=a,", ",pool", "-pool=a", "pool=-a",
                        "pool=" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "!pool=a"})
    EXPECT_FALSE(valid_label_selector(s)) << s;
}

TEST(LabelSelector, TermsReadAsNodeAffinityRequirements) {
  using R = std::vector<LabelRequirement>;
  EXPECT_EQ(parse_label_selector(""), R{});
  EXPECT_EQ(parse_label_selector("valley.dev/fleet=e2e-1"), (R{{"valley.dev/fleet", "In", {"e2e-1"}}}));
  EXPECT_EQ(parse_label_selector("!valley.dev/fleet"), (R{{"valley.dev/fleet", "DoesNotExist", {}}}));
  EXPECT_EQ(parse_label_selector("pool, tier != spot"), (R{{"pool", "Exists", {}}, {"tier", "NotIn", {"spot"}}}));
  EXPECT_EQ(parse_label_selector("zone in (a, b),zone notin (c)"), (R{{"zone", "In", {"a", "b"}}, {"zone", "NotIn", {"c"}}}));
}

}  // namespace
}  // namespace valley::kube
