// The S3 checkpoint store against a real S3-compatible server (versitygw, see versitygw.h). It
// verifies SigV4 as AWS does, so a signing mistake fails here.
#include <gtest/gtest.h>

#include "operator/storage/checkpoint_record.h"
#include "operator/storage/object_store.h"
#include "tests/storage/versitygw.h"

namespace valley::storage {
namespace {

namespace fs = std::filesystem;

class S3StoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { gw_ = new testing::VersityGw(); }
  static void TearDownTestSuite() { delete gw_; }
  static inline testing::VersityGw* gw_ = nullptr;
};

TEST_F(S3StoreTest, PutThenGetRoundTrips) {
  auto store = gw_->store("ns/task-a");
  CheckpointRecord r{42, "2026-11-22T06:00:00Z", 2, 4, "ckpt-00000042.bin"};
  store->put(kLatestKey, to_json(r));
  auto back = store->get(kLatestKey);
  ASSERT_TRUE(back);
  std::string err;
  auto parsed = parse_checkpoint_record(*back, &err);
  ASSERT_TRUE(parsed) << err;
  EXPECT_EQ(parsed->step, 42);
  // What the server stored is the object at bucket/prefix/key.
  EXPECT_TRUE(fs::exists(gw_->root() / "checkpoints/ns/task-a/latest.json"));
}

TEST_F(S3StoreTest, MissingObjectIsNullopt) { EXPECT_FALSE(gw_->store("nothing-here")->get(kLatestKey)); }

TEST_F(S3StoreTest, WrongSecretIsRefusedWithAClearError) {
  auto store = gw_->store("x", "not-the-secret");
  try {
    store->put("a", "b");
    FAIL() << "a request signed with the wrong secret was accepted";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("HTTP 403"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("s3://checkpoints/x/a"), std::string::npos) << e.what();
  }
}

TEST_F(S3StoreTest, KeysThatNeedEncodingAndLargeBinaryObjects) {
  auto store = gw_->store("odd names/ünï");
  std::string blob(6 << 20, '\0');
  for (size_t i = 0; i < blob.size(); ++i) blob[i] = static_cast<char>((i * 2654435761u) >> 13);
  store->put("ckpt 0001+x.bin", blob);
  auto back = store->get("ckpt 0001+x.bin");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->size(), blob.size());
  EXPECT_TRUE(*back == blob);
}

TEST_F(S3StoreTest, UnreachableEndpointIsAnError) {
  auto settings = gw_->settings();
  settings.endpoint = "http://127.0.0.1:" + std::to_string(testing::free_loopback_port());
  std::string err;
  auto store = make_s3_store(*parse_location("s3://checkpoints/x", &err), settings);
  EXPECT_THROW(store->get(kLatestKey), StoreError);
}

}  // namespace
}  // namespace valley::storage
