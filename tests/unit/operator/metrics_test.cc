#include "operator/metrics/registry.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

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

// One plain HTTP/1.0 GET to 127.0.0.1:port; "" when nothing accepts the connection.
std::string http_get(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string request = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
    if (::send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size())) {
      char buf[4096];
      for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  return out;
}

TEST(HttpServer, ServesProbesAndMetricsOnAFreePortAndStops) {
  bool ready = false;
  HttpEndpoints e;
  e.metrics = [] { return std::string("x 1\n"); };
  e.ready = [&](std::string* why) {
    *why = "nope";
    return ready;
  };
  int port = 0;
  {
    HttpServer server("127.0.0.1:0", e);
    port = server.port();
    ASSERT_GT(port, 0);
    const std::string metrics = http_get(port, "/metrics");
    EXPECT_NE(metrics.find(" 200 "), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("x 1\n"), std::string::npos) << metrics;
    const std::string not_ready = http_get(port, "/readyz");
    EXPECT_NE(not_ready.find(" 503 "), std::string::npos) << not_ready;
    EXPECT_NE(not_ready.find("nope"), std::string::npos) << not_ready;
    ready = true;
    EXPECT_NE(http_get(port, "/readyz").find(" 200 "), std::string::npos);
    EXPECT_NE(http_get(port, "/healthz").find(" 200 "), std::string::npos);
  }
  // Stopped: nothing listens on the port any more.
  EXPECT_EQ(http_get(port, "/healthz"), "");
  EXPECT_THROW(HttpServer("nonsense", e), std::invalid_argument);
}

}  // namespace
}  // namespace valley::metrics

namespace valley::metrics {
namespace {

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

// A client that trickles its request, one that sends nothing and one that never reads held the one
// thread that also answered the kubelet's probes. Now each holds a connection of its own for at
// most the deadline, and /healthz answers beside them.
TEST(HttpServer, SlowOrSilentClientsDoNotHoldTheProbes) {
  HttpEndpoints e;
  e.metrics = [] { return std::string(4 << 20, 'm'); };  // an answer a client that never reads leaves unsent
  HttpServer server("127.0.0.1:0", e);
  const int silent = connect_to(server.port());
  const int trickling = connect_to(server.port());
  ASSERT_EQ(::send(trickling, "GET /healthz", 12, MSG_NOSIGNAL), 12);
  const int not_reading = connect_to(server.port());
  const std::string scrape = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::send(not_reading, scrape.data(), scrape.size(), MSG_NOSIGNAL), static_cast<ssize_t>(scrape.size()));
  for (int i = 0; i < 3; ++i) {
    const std::string probe = http_get(server.port(), "/healthz");
    EXPECT_NE(probe.find(" 200 "), std::string::npos) << probe;
  }
  // Past the deadline the held connections are ended by the server, not by their clients.
  char buf[64];
  ::shutdown(trickling, SHUT_WR);  // (reads below end either way; this one only stops sending)
  for (int fd : {silent, not_reading}) {
    struct timeval tv{15, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ssize_t n = 0;
    while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) {
    }
    EXPECT_EQ(n, 0) << "closed by the server within its deadline, not left to the receive timeout";
    ::close(fd);
  }
  ::close(trickling);
}

}  // namespace
}  // namespace valley::metrics
