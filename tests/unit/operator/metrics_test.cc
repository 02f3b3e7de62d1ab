#include "operator/metrics/registry.h"

#include <gtest/gtest.h>

#include <thread>

#include "operator/http_server.h"
#include "operator/logging.h"

namespace valley::metrics {
namespace {

TEST(Metrics, TextExpositionFormat) {
  Registry r;
  auto& c = r.counter("valley_things_total", "Things.", {"kind"});
  c.inc({"a"});
  c.inc({"a"}, 2);
  c.inc({"b\"q"});
  auto& g = r.gauge("valley_level", "A level.");
  g.set({}, 2.5);
  auto& h = r.histogram("valley_seconds", "Durations.", {"op"}, {0.1, 1});
  h.observe({"x"}, 0.05);
  h.observe({"x"}, 0.5);
  h.observe({"x"}, 3);
  std::string out = r.render();
  EXPECT_NE(out.find("# HELP valley_things_total Things.\n# TYPE valley_things_total counter\n"), std::string::npos) << out;
  EXPECT_NE(out.find("valley_things_total{kind=\"a\"} 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("valley_things_total{kind=\"b\\\"q\"} 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("valley_level 2.5\n"), std::string::npos) << out;
  EXPECT_NE(out.find("valley_seconds_bucket{op=\"x\",le=\"0.1\"} 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("valley_seconds_bucket{op=\"x\",le=\"1\"} 2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("valley_seconds_bucket{op=\"x\",le=\"+Inf\"} 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("valley_seconds_sum{op=\"x\"} 3.55\n"), std::string::npos) << out;
  EXPECT_NE(out.find("valley_seconds_count{op=\"x\"} 3\n"), std::string::npos) << out;
  // Registering the same name again shares the family.
  EXPECT_EQ(&r.counter("valley_things_total", "Things.", {"kind"}), &c);
}

TEST(Metrics, CollectorsRunAtScrape) {
  Registry r;
  auto& g = r.gauge("valley_now", "Set at scrape.");
  int n = 0;
  r.add_collector([&] { g.set({}, ++n); });
  EXPECT_NE(r.render().find("valley_now 1\n"), std::string::npos);
  EXPECT_NE(r.render().find("valley_now 2\n"), std::string::npos);
}

TEST(Logging, JsonQuoting) {
  EXPECT_EQ(json_quote("a\"b\\c\nd\x01"), "\"a\\\"b\\\\c\\nd\\u0001\"");
}

TEST(HttpServer, BindsAFreePortAndStops) {
  bool ready = false;
  HttpEndpoints e;
  e.metrics = [] { return std::string("x 1\n"); };
  e.ready = [&](std::string* why) {
    *why = "nope";
    return ready;
  };
  HttpServer server("127.0.0.1:0", e);
  EXPECT_GT(server.port(), 0);
  EXPECT_THROW(HttpServer("nonsense", e), std::invalid_argument);
}

}  // namespace
}  // namespace valley::metrics
