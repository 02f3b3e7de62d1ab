// A tenant names its own S3 endpoint, which may be hostile: an answer without end, a listing that
// never stops, an answer trickled a byte at a time. The operator's store client refuses each with a
// StoreError once past its bounds (what it holds, how long a call takes, how many objects one
// listing reads); its listing parser reads anything without another exception; and the watchers
// read one namespace's store at a time on several threads, so the slow one holds one thread only.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <optional>
#include <thread>

#include "controllers/task/poll_schedule.h"
#include "operator/storage/address_filter.h"
#include "operator/storage/object_store.h"
#include "operator/storage/s3_xml.h"

namespace valley::storage {
namespace {

using namespace std::chrono_literals;

// A loopback HTTP server answering every request with `answer(request_number)`, written in pieces
// with `pause` between them; it stops when destroyed.
class HostileEndpoint {
 public:
  HostileEndpoint(std::function<std::vector<std::string>(int)> answer, std::chrono::milliseconds pause)
      : answer_(std::move(answer)), pause_(pause) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::listen(fd_, 8);
    thread_ = std::thread([this] { serve(); });
  }
  ~HostileEndpoint() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int requests() const { return requests_; }  // whole requests received

 private:
  void serve() {
    for (int n = 0; !stop_; ++n) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      char buf[8192];
      std::string request;
      while (request.find("\r\n\r\n") == std::string::npos) {
        const ssize_t got = ::recv(c, buf, sizeof buf, 0);
        if (got <= 0) break;
        request.append(buf, static_cast<size_t>(got));
      }
      if (request.find("\r\n\r\n") != std::string::npos) ++requests_;
      for (const auto& piece : answer_(n)) {
        if (stop_ || ::send(c, piece.data(), piece.size(), MSG_NOSIGNAL) < 0) break;
        if (pause_.count()) std::this_thread::sleep_for(pause_);
      }
      ::close(c);
    }
  }
  std::function<std::vector<std::string>(int)> answer_;
  std::chrono::milliseconds pause_;
  int fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::thread thread_;
};

std::unique_ptr<ObjectStore> store_at(const std::string& url, S3Settings bounds) {
  std::string error;
  auto settings = s3_settings_from({{"AWS_ENDPOINT_URL", url}, {"AWS_ACCESS_KEY_ID", "a"}, {"AWS_SECRET_ACCESS_KEY", "s"}}, &error);
  EXPECT_TRUE(settings) << error;
  settings->max_answer_bytes = bounds.max_answer_bytes;
  settings->call_timeout = bounds.call_timeout;
  settings->max_listed = bounds.max_listed;
  settings->denied_cidrs = bounds.denied_cidrs;
  auto location = parse_location("s3://bkt/team", &error);
  return make_s3_store(*location, *settings);
}

// The StoreError `call` ends with; nullopt when it returns instead.
template <typename F>
std::optional<std::string> store_error(F&& call) {
  try {
    call();
  } catch (const StoreError& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

std::string headers(size_t length) {
  return "HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nContent-Length: " + std::to_string(length) + "\r\nConnection: close\r\n\r\n";
}

TEST(HostileStore, AnAnswerWithoutEndIsCutAtTheBound) {
  const std::string chunk(1 << 20, 'x');
  HostileEndpoint endpoint([&](int) { return std::vector<std::string>{headers(size_t{64} << 20), chunk, chunk, chunk, chunk}; }, 0ms);
  S3Settings bounds;
  bounds.max_answer_bytes = 2 << 20;
  auto store = store_at(endpoint.url(), bounds);
  const auto error = store_error([&] { (void)store->get("latest.json"); });
  ASSERT_TRUE(error) << "a 64 MiB answer was taken";
  EXPECT_NE(error->find("larger than 2 MiB"), std::string::npos) << *error;
}

// An endpoint at an address the operator does not reach for tasks (here loopback, standing for the
// cloud's metadata service or another tenant's pods) is refused once connected, before the request
// goes out; the operator's bounds always deny link-local addresses.
TEST(HostileStore, AnEndpointAtADeniedAddressIsNeverSentARequest) {
  HostileEndpoint endpoint([&](int) { return std::vector<std::string>{headers(2), "{}"}; }, 0ms);
  S3Settings bounds;
  bounds.denied_cidrs = {"10.0.0.0/8", "127.0.0.0/8"};
  auto store = store_at(endpoint.url(), bounds);
  const auto error = store_error([&] { (void)store->get("latest.json"); });
  ASSERT_TRUE(error) << "a denied address was read";
  EXPECT_NE(error->find("refused: the endpoint's address 127.0.0.1 (in 127.0.0.0/8)"), std::string::npos) << *error;
  EXPECT_EQ(endpoint.requests(), 0);
  bounds.denied_cidrs = {"10.0.0.0/8"};
  EXPECT_EQ(store_at(endpoint.url(), bounds)->get("latest.json"), "{}") << "other addresses are read";

  const auto operator_bounds = with_operator_bounds(S3Settings{}, {"10.96.0.0/12"}).denied_cidrs;
  for (const char* c : {"169.254.0.0/16", "fe80::/10", "10.96.0.0/12"})
    EXPECT_NE(std::find(operator_bounds.begin(), operator_bounds.end(), c), operator_bounds.end()) << c;
}

// What answers that is not an S3 store (an internal service, a metadata endpoint) is not repeated
// into the task's status: only its size.
TEST(HostileStore, AnAnswerThatIsNotAnS3ErrorIsNotRepeated) {
  const std::string secret = "internal-token-0123456789";
  HostileEndpoint endpoint([&](int) {
    return std::vector<std::string>{"HTTP/1.1 500 Oops\r\nContent-Length: " + std::to_string(secret.size()) + "\r\nConnection: close\r\n\r\n", secret};
  }, 0ms);
  const auto error = store_error([&] { (void)store_at(endpoint.url(), S3Settings{})->get("latest.json"); });
  ASSERT_TRUE(error) << "an error was taken";
  EXPECT_EQ(error->find(secret), std::string::npos) << *error;
  EXPECT_NE(error->find("not an S3 error (25 bytes)"), std::string::npos) << *error;
  EXPECT_EQ(s3_error_excerpt("<Error><Code>NoSuchKey</Code><Message>gone</Message></Error>"), "NoSuchKey: gone");
}

TEST(AddressFilter, AnAddressIsDeniedByThePrefixThatHoldsIt) {
  const std::vector<std::string> cidrs = {"169.254.0.0/16", "fd00::/8", "10.96.0.0/12"};
  EXPECT_EQ(denied_by("169.254.169.254", cidrs), "169.254.0.0/16");
  EXPECT_EQ(denied_by("10.111.2.3", cidrs), "10.96.0.0/12");
  EXPECT_EQ(denied_by("10.112.0.1", cidrs), std::nullopt) << "outside /12";
  EXPECT_EQ(denied_by("fd12::1", cidrs), "fd00::/8");
  EXPECT_EQ(denied_by("::ffff:169.254.1.1", cidrs), "169.254.0.0/16") << "IPv4-mapped";
  EXPECT_EQ(denied_by("8.8.8.8", cidrs), std::nullopt);
  EXPECT_EQ(denied_by("not-an-address", cidrs), std::nullopt);
  EXPECT_EQ(denied_by("1.2.3.4", {"0.0.0.0/0"}), "0.0.0.0/0");
  for (const char* good : {"10.0.0.0/8", "::/0", "fe80::/10", "1.2.3.4/32"}) EXPECT_TRUE(valid_cidr(good)) << good;
  for (const char* bad : {"10.0.0.0", "10.0.0.0/33", "::/129", "x/8", "10.0.0.0/", "10.0.0.0/8a"}) EXPECT_FALSE(valid_cidr(bad)) << bad;
}

TEST(HostileStore, AnAnswerTrickledPastTheCallTimeoutEnds) {
  std::vector<std::string> bytes = {headers(1000)};
  for (int i = 0; i < 1000; ++i) bytes.push_back("x");
  HostileEndpoint endpoint([&](int) { return bytes; }, 100ms);
  S3Settings bounds;
  bounds.call_timeout = 1s;
  auto store = store_at(endpoint.url(), bounds);
  const auto error = store_error([&] { (void)store->get("latest.json"); });
  ASSERT_TRUE(error) << "a trickled answer was waited for";
  EXPECT_NE(error->find("imeout"), std::string::npos) << *error;
}

TEST(HostileStore, AListingThatNeverEndsStopsAtTheBound) {
  auto page = [](int n) {
    std::string xml = "<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>t" + std::to_string(n) +
                      "</NextContinuationToken>";
    for (int i = 0; i < 100; ++i) xml += "<Contents><Key>team/o" + std::to_string(n * 100 + i) + "</Key><Size>1</Size></Contents>";
    xml += "</ListBucketResult>";
    return std::vector<std::string>{headers(xml.size()), xml};
  };
  HostileEndpoint endpoint(page, 0ms);
  S3Settings bounds;
  bounds.max_listed = 250;
  auto store = store_at(endpoint.url(), bounds);
  const auto error = store_error([&] { (void)store->list(); });
  ASSERT_TRUE(error) << "an endless listing was followed";
  EXPECT_NE(error->find("more than 250 objects"), std::string::npos) << *error;
}

TEST(S3Xml, AListingPageItCannotReadIsAStoreErrorSayingWhy) {
  const std::string where = "s3://bkt/team";
  const auto ok = parse_list_page(
      "<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>a&amp;b</NextContinuationToken>"
      "<Contents><Key>team/x&#34;y</Key><Size>12</Size><ETag>&quot;e1&quot;</ETag></Contents>"
      "<Contents><Key>team/dir/</Key><Size>0</Size></Contents></ListBucketResult>",
      "team/", where);
  ASSERT_EQ(ok.objects.size(), 1u);
  EXPECT_EQ(ok.objects[0].key, "x\"y");
  EXPECT_EQ(ok.objects[0].size, 12u);
  EXPECT_EQ(ok.objects[0].etag, "e1");
  EXPECT_TRUE(ok.truncated);
  EXPECT_EQ(ok.next_token, "a&b");
  for (const std::string bad : {"<Contents><Key>other/x</Key></Contents>", "<Contents><Key>team/x</Key><Size>-1</Size></Contents>",
                                "<Contents><Key>team/x</Key><Size>99999999999999999999999</Size></Contents>",
                                "<Contents><Key>team/x</Key>"})
    EXPECT_THROW((void)parse_list_page(bad, "team/", where), StoreError) << bad;
  EXPECT_EQ(xml_text("&#x;&#99999999999;&#0;&bogus;"), "&#x;&#99999999999;&#0;&bogus;") << "kept as written, not thrown";
}

TEST(StoreThreads, OneNamespacesSlowStoreHoldsOneThreadWhileTheOthersAreRead) {
  struct Entry {
    std::string ns;
    std::chrono::steady_clock::time_point next{};
  };
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, Entry> entries = {{"slow/a", {"slow"}}, {"slow/b", {"slow"}}, {"fast/a", {"fast"}}, {"other/a", {"other"}}};
  std::atomic<bool> stop{false}, release{false};
  std::atomic<int> slow_at_once{0}, slow_most{0}, others{0};
  std::thread runner([&] {
    task::run_per_namespace(stop, 3, mu, cv, entries, 3600s, [](const Entry&) { return true; }, [&](const std::string& key, Entry e) {
      if (e.ns != "slow") {
        ++others;
        return;
      }
      slow_most = std::max(slow_most.load(), ++slow_at_once);
      while (!release.load() && !stop.load()) std::this_thread::sleep_for(5ms);
      --slow_at_once;
      (void)key;
    });
  });
  for (int i = 0; i < 400 && others.load() < 2; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(others.load(), 2) << "the other namespaces were read while the slow store held its thread";
  EXPECT_EQ(slow_most.load(), 1) << "never two reads of one namespace at once";
  release = true;
  stop = true;
  cv.notify_all();
  runner.join();
}

}  // namespace
}  // namespace valley::storage
