#include "operator/kube/watch_decoder.h"

#include <gtest/gtest.h>

#include <random>

namespace valley::kube {
namespace {

std::string frame(const std::string& type, const std::string& name, const std::string& rv) {
  return R"({"type":")" + type + R"(","object":{"kind":"Pod","metadata":{"name":")" + name +
         R"(","resourceVersion":")" + rv + R"("}}})" + "\n";
}

struct Collector {
  std::vector<WatchEvent> events;
  WatchDecoder decoder{[this](WatchEvent&& e) {
    events.push_back(std::move(e));
    return true;
  }};
};

TEST(WatchDecoder, DecodesWholeFrames) {
  Collector c;
  EXPECT_TRUE(c.decoder.feed(frame("ADDED", "a", "1") + frame("MODIFIED", "a", "2") + frame("DELETED", "a", "3")));
  ASSERT_EQ(c.events.size(), 3u);
  EXPECT_EQ(c.events[0].type, "ADDED");
  EXPECT_EQ(c.events[2].type, "DELETED");
  EXPECT_EQ(c.events[1].object["metadata"]["resourceVersion"], "2");
}

TEST(WatchDecoder, FramesSplitAtEveryPossibleByteGiveTheSameEvents) {
  std::string stream = frame("ADDED", "a", "1") + frame("BOOKMARK", "", "7") + frame("MODIFIED", "b", "8");
  for (size_t cut1 = 0; cut1 <= stream.size(); ++cut1) {
    Collector c;
    c.decoder.feed(std::string_view(stream).substr(0, cut1));
    c.decoder.feed(std::string_view(stream).substr(cut1));
    c.decoder.finish();
    ASSERT_EQ(c.events.size(), 3u) << "cut at " << cut1;
    EXPECT_EQ(c.events[1].type, "BOOKMARK");
    EXPECT_EQ(c.events[2].object["metadata"]["name"], "b");
  }
}

TEST(WatchDecoder, RandomChunkingMatchesWholeDecoding) {
  std::string stream;
  for (int i = 0; i < 200; ++i) stream += frame(i % 3 ? "MODIFIED" : "ADDED", "p" + std::to_string(i), std::to_string(i));
  std::mt19937 rng(42);
  Collector c;
  for (size_t pos = 0; pos < stream.size();) {
    size_t n = std::min<size_t>(stream.size() - pos, 1 + rng() % 97);
    c.decoder.feed(std::string_view(stream).substr(pos, n));
    pos += n;
  }
  ASSERT_EQ(c.events.size(), 200u);
  EXPECT_EQ(c.events[199].object["metadata"]["name"], "p199");
}

TEST(WatchDecoder, ErrorFramesArePassedOnWithTheirStatus) {
  Collector c;
  c.decoder.feed(R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old resource version"}})"
                 "\n");
  ASSERT_EQ(c.events.size(), 1u);
  EXPECT_EQ(c.events[0].type, "ERROR");
  EXPECT_EQ(c.events[0].object["code"], 410);
}

TEST(WatchDecoder, GarbageLinesAreCountedAndSkipped) {
  Collector c;
  c.decoder.feed("not json\n{\"type\":\"ADDED\"}\n[1,2]\n{\"type\":7,\"object\":{}}\n\n\r\n" + frame("ADDED", "ok", "1"));
  ASSERT_EQ(c.events.size(), 1u);
  EXPECT_EQ(c.events[0].object["metadata"]["name"], "ok");
  EXPECT_EQ(c.decoder.malformed(), 4u);
}

TEST(WatchDecoder, TrailingFrameWithoutNewlineIsDecodedAtFinish) {
  Collector c;
  std::string f = frame("ADDED", "last", "1");
  f.pop_back();
  c.decoder.feed(f);
  EXPECT_TRUE(c.events.empty());
  c.decoder.finish();
  EXPECT_EQ(c.events.size(), 1u);
}

TEST(WatchDecoder, StopsWhenTheHandlerSaysSo) {
  int seen = 0;
  WatchDecoder d([&](WatchEvent&&) { return ++seen < 2; });
  EXPECT_FALSE(d.feed(frame("ADDED", "a", "1") + frame("ADDED", "b", "2") + frame("ADDED", "c", "3")));
  EXPECT_EQ(seen, 2);
  EXPECT_FALSE(d.feed(frame("ADDED", "d", "4")));
  EXPECT_EQ(seen, 2);
}

}  // namespace
}  // namespace valley::kube
