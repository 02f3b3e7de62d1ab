// The S3 checkpoint store against a real S3-compatible server: versitygw (built from the Go module
// proxy by tests/cluster/build-binaries.sh) on loopback with its POSIX backend. It verifies SigV4
// as AWS does, so a signing mistake fails here.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "operator/storage/checkpoint_record.h"
#include "operator/storage/object_store.h"
#include "tests/e2e/support.h"

namespace valley::storage {
namespace {

namespace fs = std::filesystem;
using e2e::ChildProcess;

constexpr const char* kAccess = "valleytest";
constexpr const char* kSecret = "valley-test-secret-key/+=";

int free_port() {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(s);
  return ntohs(a.sin_port);
}

class S3StoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / ("valley-s3-" + std::to_string(::getpid()));
    fs::create_directories(root_ / "checkpoints");  // a bucket is a directory
    port_ = free_port();
    std::string gw = std::string(VALLEY_SOURCE_DIR) + "/.valley/bin/versitygw";
    ASSERT_TRUE(fs::exists(gw)) << gw << " missing: run make cluster-binaries";
    server_ = new ChildProcess({gw, "--access", kAccess, "--secret", kSecret, "--port", "127.0.0.1:" + std::to_string(port_),
                                "posix", "--nometa", root_.string()},
                               (root_.string() + ".log"));
    // Ready when it answers (unsigned requests are refused, which is an answer).
    bool up = e2e::eventually([&] {
      try {
        auto store = make_s3_store(location("probe"), settings());
        store->get("x");
        return true;
      } catch (const StoreError& e) {
        return std::string(e.what()).find("HTTP") != std::string::npos;
      }
    }, std::chrono::seconds(20));
    ASSERT_TRUE(up) << server_->output();
  }
  static void TearDownTestSuite() {
    delete server_;
    fs::remove_all(root_);
    fs::remove(root_.string() + ".log");
  }
  static Location location(const std::string& prefix) {
    std::string err;
    return *parse_location("s3://checkpoints/" + prefix, &err);
  }
  static S3Settings settings(const std::string& secret = kSecret) {
    std::string err;
    return *s3_settings_from({{"AWS_ACCESS_KEY_ID", kAccess}, {"AWS_SECRET_ACCESS_KEY", secret},
                              {"AWS_ENDPOINT_URL", "http://127.0.0.1:" + std::to_string(port_)}}, &err);
  }
  static inline fs::path root_;
  static inline int port_ = 0;
  static inline ChildProcess* server_ = nullptr;
};

TEST_F(S3StoreTest, PutThenGetRoundTrips) {
  auto store = make_s3_store(location("ns/task-a"), settings());
  CheckpointRecord r{42, "2026-11-22T06:00:00Z", 2, 4, "ckpt-00000042.bin"};
  store->put(kLatestKey, to_json(r));
  auto back = store->get(kLatestKey);
  ASSERT_TRUE(back);
  std::string err;
  auto parsed = parse_checkpoint_record(*back, &err);
  ASSERT_TRUE(parsed) << err;
  EXPECT_EQ(parsed->step, 42);
  // What the server stored is the object at bucket/prefix/key.
  EXPECT_TRUE(fs::exists(root_ / "checkpoints/ns/task-a/latest.json"));
}

TEST_F(S3StoreTest, MissingObjectIsNullopt) {
  auto store = make_s3_store(location("nothing-here"), settings());
  EXPECT_FALSE(store->get(kLatestKey));
}

TEST_F(S3StoreTest, WrongSecretIsRefusedWithAClearError) {
  auto store = make_s3_store(location("x"), settings("not-the-secret"));
  try {
    store->put("a", "b");
    FAIL() << "a request signed with the wrong secret was accepted";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("HTTP 403"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("s3://checkpoints/x/a"), std::string::npos) << e.what();
  }
}

TEST_F(S3StoreTest, KeysThatNeedEncodingAndLargeBinaryObjects) {
  auto store = make_s3_store(location("odd names/ünï"), settings());
  std::string blob(6 << 20, '\0');
  for (size_t i = 0; i < blob.size(); ++i) blob[i] = static_cast<char>((i * 2654435761u) >> 13);
  store->put("ckpt 0001+x.bin", blob);
  auto back = store->get("ckpt 0001+x.bin");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->size(), blob.size());
  EXPECT_TRUE(*back == blob);
}

TEST_F(S3StoreTest, UnreachableEndpointIsAnError) {
  std::string err;
  auto s = *s3_settings_from({{"AWS_ACCESS_KEY_ID", kAccess}, {"AWS_SECRET_ACCESS_KEY", kSecret},
                              {"AWS_ENDPOINT_URL", "http://127.0.0.1:" + std::to_string(free_port())}}, &err);
  auto store = make_s3_store(location("x"), s);
  EXPECT_THROW(store->get(kLatestKey), StoreError);
}

}  // namespace
}  // namespace valley::storage
