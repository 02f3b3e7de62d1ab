#include "operator/storage/object_store.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "operator/storage/checkpoint_record.h"
#include "tests/scratch_dir.h"

namespace valley::storage {
namespace {

TEST(Location, S3) {
  std::string err;
  auto l = parse_location("s3://my-bucket/runs/exp1/", &err);
  ASSERT_TRUE(l) << err;
  EXPECT_EQ(l->scheme, Location::Scheme::S3);
  EXPECT_EQ(l->bucket, "my-bucket");
  EXPECT_EQ(l->prefix, "runs/exp1");
  auto bare = parse_location("s3://bucket", &err);
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->prefix, "");
}

TEST(Location, PvcMountsUnderValleyCheckpoint) {
  std::string err;
  auto l = parse_location("pvc://ckpt-claim/task-a", &err);
  ASSERT_TRUE(l) << err;
  EXPECT_EQ(l->scheme, Location::Scheme::Pvc);
  EXPECT_EQ(pvc_mount_path(*l), "/valley/checkpoint/ckpt-claim");
  EXPECT_EQ(pvc_directory(*l), "/valley/checkpoint/ckpt-claim/task-a");
}

TEST(Location, Errors) {
  std::string err;
  EXPECT_FALSE(parse_location("bucket/prefix", &err));
  EXPECT_NE(err.find("no scheme"), std::string::npos);
  EXPECT_FALSE(parse_location("gs://bucket/x", &err));
  EXPECT_NE(err.find("\"gs\""), std::string::npos);
  EXPECT_FALSE(parse_location("s3://Bad_Bucket/x", &err));
  EXPECT_NE(err.find("bucket name"), std::string::npos);
  EXPECT_FALSE(parse_location("pvc://c/../../etc", &err));
  EXPECT_FALSE(parse_location("file://relative", &err));
  EXPECT_TRUE(parse_location("file:///tmp/x", &err));
}

TEST(S3Settings, FromAwsNames) {
  std::string err;
  auto s = s3_settings_from({{"AWS_ACCESS_KEY_ID", "ak"}, {"AWS_SECRET_ACCESS_KEY", "sk"},
                             {"AWS_ENDPOINT_URL", "http://127.0.0.1:7070"}, {"AWS_REGION", "eu-central-1"}}, &err);
  ASSERT_TRUE(s) << err;
  EXPECT_EQ(s->endpoint, "http://127.0.0.1:7070");
  EXPECT_EQ(s->region, "eu-central-1");
  auto aws = s3_settings_from({{"AWS_ACCESS_KEY_ID", "ak"}, {"AWS_SECRET_ACCESS_KEY", "sk"}, {"AWS_DEFAULT_REGION", "ap-south-1"}}, &err);
  ASSERT_TRUE(aws);
  EXPECT_EQ(aws->endpoint, "https://s3.ap-south-1.amazonaws.com");
  EXPECT_FALSE(s3_settings_from({{"AWS_ACCESS_KEY_ID", "ak"}}, &err));
  EXPECT_NE(err.find("AWS_SECRET_ACCESS_KEY"), std::string::npos);
  EXPECT_FALSE(s3_settings_from({{"AWS_ACCESS_KEY_ID", "a"}, {"AWS_SECRET_ACCESS_KEY", "b"}, {"AWS_ENDPOINT_URL", "ftp://x"}}, &err));
}

TEST(DirStore, PutGetMissing) {
  const valley::testing::ScratchDir scratch("valley-dirstore");
  const auto dir = scratch / "store";
  auto store = make_dir_store(dir.string());
  EXPECT_FALSE(store->get("latest.json"));
  store->put("latest.json", "{\"step\":1}");
  EXPECT_EQ(*store->get("latest.json"), "{\"step\":1}");
  store->put("latest.json", "{\"step\":2}");
  EXPECT_EQ(*store->get("latest.json"), "{\"step\":2}");
  EXPECT_FALSE(std::filesystem::exists(dir / "latest.json.tmp"));
}

TEST(CheckpointRecord, RoundTrip) {
  CheckpointRecord r{120, "2026-11-22T06:01:02Z", 3, 4, "ckpt-00000120.bin"};
  std::string err;
  auto back = parse_checkpoint_record(to_json(r), &err);
  ASSERT_TRUE(back) << err;
  EXPECT_EQ(back->step, 120);
  EXPECT_EQ(back->time, r.time);
  EXPECT_EQ(back->epoch, 3);
  EXPECT_EQ(back->world_size, 4);
  EXPECT_EQ(back->object, r.object);
}

TEST(CheckpointRecord, PathIsAnAliasForObject) {
  auto r = parse_checkpoint_record(R"({"step":3,"time":"2026-11-22T06:01:02Z","path":"ckpt-3.bin"})", nullptr);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->object, "ckpt-3.bin");
}

TEST(CheckpointRecord, Errors) {
  std::string err;
  EXPECT_FALSE(parse_checkpoint_record("not json", &err));
  EXPECT_FALSE(parse_checkpoint_record("{\"step\":-1,\"time\":\"2026-11-22T06:01:02Z\"}", &err));
  EXPECT_NE(err.find("step"), std::string::npos);
  EXPECT_FALSE(parse_checkpoint_record("{\"step\":1,\"time\":\"yesterday\"}", &err));
  EXPECT_NE(err.find("time"), std::string::npos);
  // Optional fields, when present, must be well formed (tests/bad-inputs/checkpoints/).
  for (const char* field : {R"("epoch":"3")", R"("epoch":-1)", R"("worldSize":0)", R"("worldSize":-4)", R"("worldSize":4294967297)",
                            R"("object":7)", R"("path":null)"}) {
    EXPECT_FALSE(parse_checkpoint_record(std::string(R"({"step":1,"time":"2026-11-22T06:01:02Z",)") + field + "}", &err)) << field;
    EXPECT_NE(err.find(std::string(field).substr(1, std::string(field).find('"', 1) - 1)), std::string::npos) << err;
  }
}

// What valley-io retries: a store that did not answer or answered "later"; not a refusal.
TEST(StoreError, OnlyTheStoresOwnRefusalsArePermanent) {
  for (long refused : {400L, 403L, 404L, 409L}) EXPECT_TRUE(StoreError("x", refused).permanent()) << refused;
  for (long later : {0L, 408L, 429L, 500L, 503L}) EXPECT_FALSE(StoreError("x", later).permanent()) << later;
}

}  // namespace
}  // namespace valley::storage
