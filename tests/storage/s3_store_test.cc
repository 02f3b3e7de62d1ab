// The S3 checkpoint store against a real S3-compatible server (versitygw, see versitygw.h). It
// verifies SigV4 as AWS does, so a signing mistake fails here.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <thread>
#include <sstream>

#include "operator/storage/checkpoint_record.h"
#include "operator/storage/object_store.h"
#include "operator/storage/transfer.h"
#include "tests/storage/versitygw.h"

namespace valley::storage {
namespace {

namespace fs = std::filesystem;

class S3StoreTest : public ::testing::Test {
 protected:
  // With object metadata: listings carry ETags, and multipart uploads are checked against them.
  static void SetUpTestSuite() { gw_ = new testing::VersityGw("127.0.0.1", true); }
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
  settings.endpoint = "http://127.0.0.1:" + std::to_string(e2e::free_loopback_port());
  std::string err;
  auto store = make_s3_store(*parse_location("s3://checkpoints/x", &err), settings);
  EXPECT_THROW(store->get(kLatestKey), StoreError);
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_F(S3StoreTest, ListsEveryObjectUnderThePrefixAcrossPagesWithSizesAndEtags) {
  auto store = gw_->store("list/set");
  for (int i = 0; i < 1005; ++i) store->put("part/" + std::to_string(10000 + i) + ".bin", std::string(i % 7, 'x'));
  store->put("a & b <c>.txt", "odd");
  gw_->store("list/setother")->put("not-mine", "x");  // a sibling prefix that starts alike
  auto all = store->list();
  ASSERT_EQ(all.size(), 1006u);
  EXPECT_EQ(all.front().key, "a & b <c>.txt");
  EXPECT_EQ(all.front().size, 3u);
  EXPECT_FALSE(all.front().etag.empty());
  EXPECT_EQ(all.front().etag.find('"'), std::string::npos) << all.front().etag;
  EXPECT_EQ(all.back().key, "part/11004.bin");
  EXPECT_EQ(store->list(2).size(), 2u);
  EXPECT_TRUE(gw_->store("list/empty")->list().empty());
  std::string err;
  auto missing = make_s3_store(*parse_location("s3://no-such-bucket/x", &err), gw_->settings());
  try {
    missing->list();
    FAIL() << "a missing bucket listed as empty";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("NoSuchBucket"), std::string::npos) << e.what();
    EXPECT_EQ(e.http_status, 404);
    EXPECT_TRUE(e.permanent()) << "asking a missing bucket again gives the same answer";
  }
  try {
    missing->put("k", "v");
    FAIL() << "a PUT into a missing bucket succeeded";
  } catch (const StoreError& e) {
    EXPECT_TRUE(e.permanent()) << e.what();
  }
}

TEST_F(S3StoreTest, StreamsFilesBothWaysAndResumesADownloadFromAnOffset) {
  auto store = gw_->store("stream");
  const fs::path dir = fs::path(::testing::TempDir()) / "stream";
  fs::create_directories(dir);
  std::string blob(3 << 20, '\0');
  for (size_t i = 0; i < blob.size(); ++i) blob[i] = static_cast<char>(i * 131 % 251);
  std::ofstream(dir / "up.bin", std::ios::binary) << blob;
  store->upload("up.bin", (dir / "up.bin").string());
  EXPECT_TRUE(*store->get("up.bin") == blob);
  // The first megabyte is there already: the rest is appended.
  std::ofstream(dir / "down.bin", std::ios::binary) << blob.substr(0, 1 << 20);
  EXPECT_EQ(store->download("up.bin", (dir / "down.bin").string(), 1 << 20), blob.size() - (1 << 20));
  EXPECT_TRUE(read_file(dir / "down.bin") == blob);
  EXPECT_THROW(store->download("absent", (dir / "absent").string(), 0), StoreError);
}

TEST_F(S3StoreTest, ALargeFileGoesUpInPartsAndReadsBackWhole) {
  auto settings = gw_->settings();
  settings.multipart_threshold = 6 << 20;
  settings.part_size = 5 << 20;  // S3's smallest part: 12 MiB go up as 5 + 5 + 2
  std::string err;
  auto store = make_s3_store(*parse_location(std::string("s3://") + testing::VersityGw::kBucket + "/parts", &err), settings);
  const fs::path file = fs::path(::testing::TempDir()) / "large.bin";
  std::string blob(12 << 20, '\0');
  for (size_t i = 0; i < blob.size(); ++i) blob[i] = static_cast<char>((i * 2654435761u) >> 13);
  std::ofstream(file, std::ios::binary) << blob;
  store->upload("model/large.bin", file.string());
  auto back = store->get("model/large.bin");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->size(), blob.size());
  EXPECT_TRUE(*back == blob);
  // A part the store refuses (here: the credentials) fails the upload and leaves no object.
  auto denied = make_s3_store(*parse_location(std::string("s3://") + testing::VersityGw::kBucket + "/parts", &err), [&] {
    auto s = gw_->settings("not-the-secret");
    s.multipart_threshold = 6 << 20;
    s.part_size = 5 << 20;
    return s;
  }());
  EXPECT_THROW(denied->upload("model/denied.bin", file.string()), StoreError);
  EXPECT_FALSE(store->get("model/denied.bin").has_value());
}

TEST_F(S3StoreTest, FetchCopiesADataSetOnceAndResumesAFileCutOffMidCopy) {
  auto store = gw_->store("data/set1");
  store->put("train/shard-0.bin", std::string(1 << 20, 'a'));
  store->put("train/shard-1.bin", std::string(2 << 20, 'b'));
  store->put("labels.csv", "x,y\n1,2\n");
  const fs::path dir = fs::path(::testing::TempDir()) / "data1";
  fs::remove_all(dir);
  auto s = fetch_into(*store, dir.string(), nullptr);
  EXPECT_EQ(s.files, 3);
  EXPECT_EQ(s.copied, 3);
  EXPECT_EQ(s.bytes, (3u << 20) + 8u);
  EXPECT_TRUE(fs::exists(dir / kDataManifest));
  EXPECT_EQ(read_file(dir / "train/shard-1.bin"), std::string(2 << 20, 'b'));
  // Again: nothing to copy. A changed object is copied again.
  s = fetch_into(*store, dir.string(), nullptr);
  EXPECT_EQ(s.unchanged, 3);
  EXPECT_EQ(s.copied, 0);
  store->put("labels.csv", "x,y\n3,4\n5,6\n");
  s = fetch_into(*store, dir.string(), nullptr);
  EXPECT_EQ(s.copied, 1);
  EXPECT_EQ(read_file(dir / "labels.csv"), "x,y\n3,4\n5,6\n");
  // A pod stopped half-way through shard-1: its part file and the manifest's record of it remain.
  fs::remove(dir / "train/shard-1.bin");
  std::string manifest = read_file(dir / kDataManifest);
  auto m = nlohmann::json::parse(manifest);
  m["files"].erase("train/shard-1.bin");
  m["partial"]["train/shard-1.bin"] = store->list()[2].etag;
  std::ofstream(dir / kDataManifest) << m.dump();
  std::ofstream(dir / "train/shard-1.bin.valley-part", std::ios::binary) << std::string(1 << 20, 'b');
  std::vector<std::string> said;
  s = fetch_into(*store, dir.string(), [&](const std::string& l) { said.push_back(l); });
  EXPECT_EQ(s.copied, 1);
  EXPECT_EQ(s.resumed, 1);
  EXPECT_EQ(s.copied_bytes, 1u << 20) << "only the missing half is downloaded";
  EXPECT_EQ(read_file(dir / "train/shard-1.bin"), std::string(2 << 20, 'b'));
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(said[0], "resumed train/shard-1.bin at byte 1048576");
  EXPECT_FALSE(fs::exists(dir / "train/shard-1.bin.valley-part"));
}

// A node's copy shared by the task's pods: what left the store leaves the directory, and two
// fetches at once (two workers starting on the node) copy each object once between them.
TEST_F(S3StoreTest, FetchRemovesWhatLeftTheStoreAndTwoFetchesOfOneDirectoryTakeTurns) {
  auto store = gw_->store("data/set2");
  for (int i = 0; i < 4; ++i) store->put("shard-" + std::to_string(i) + ".bin", std::string(256 << 10, static_cast<char>('a' + i)));
  const fs::path dir = fs::path(::testing::TempDir()) / "data2";
  fs::remove_all(dir);
  TransferSummary first, second;
  std::thread a([&] { first = fetch_into(*gw_->store("data/set2"), dir.string(), nullptr); });
  std::thread b([&] { second = fetch_into(*gw_->store("data/set2"), dir.string(), nullptr); });
  a.join();
  b.join();
  EXPECT_EQ(first.files, 4);
  EXPECT_EQ(second.files, 4);
  EXPECT_EQ(first.copied + second.copied, 4) << "one copied the set, the other found it there";
  EXPECT_EQ(first.unchanged + second.unchanged, 4);
  EXPECT_TRUE(fs::exists(dir / kDataLock));
  // The set loses a shard (a new one written under another key): the copy follows it.
  auto smaller = gw_->store("data/set3");
  for (int i : {0, 1, 3}) smaller->put("shard-" + std::to_string(i) + ".bin", std::string(256 << 10, static_cast<char>('a' + i)));
  auto s = fetch_into(*smaller, dir.string(), nullptr);
  EXPECT_EQ(s.files, 3);
  EXPECT_EQ(s.removed, 1);
  EXPECT_FALSE(fs::exists(dir / "shard-2.bin"));
  EXPECT_TRUE(fs::exists(dir / "shard-3.bin"));
  EXPECT_NE(describe(s).find("1 removed"), std::string::npos) << describe(s);
  EXPECT_FALSE(nlohmann::json::parse(read_file(dir / kDataManifest))["files"].contains("shard-2.bin"));
}

TEST_F(S3StoreTest, KeepUploadsADirectoryOnceAndAgainOnlyWhatChanged) {
  const fs::path dir = fs::path(::testing::TempDir()) / "out1";
  fs::remove_all(dir);
  fs::create_directories(dir / "model");
  std::ofstream(dir / "model/weights.bin") << std::string(5000, 'w');
  std::ofstream(dir / "metrics.json") << "{}";
  auto store = gw_->store("outputs/task1");
  auto s = keep_from(dir.string(), *store, nullptr);
  EXPECT_EQ(s.files, 2);
  EXPECT_EQ(s.copied, 2);
  EXPECT_EQ(*store->get("model/weights.bin"), std::string(5000, 'w'));
  EXPECT_EQ(store->list().size(), 2u) << "the manifest is not uploaded";
  s = keep_from(dir.string(), *store, nullptr);
  EXPECT_EQ(s.copied, 0);
  EXPECT_EQ(s.unchanged, 2);
  std::ofstream(dir / "metrics.json") << "{\"loss\": 0.1}";
  s = keep_from(dir.string(), *store, nullptr);
  EXPECT_EQ(s.copied, 1);
  EXPECT_EQ(*store->get("metrics.json"), "{\"loss\": 0.1}");
  EXPECT_EQ(keep_from((dir / "absent").string(), *store, nullptr).files, 0) << "no output directory: nothing kept";
}

}  // namespace
}  // namespace valley::storage
