#include "operator/kube/field_mask.h"

#include <gtest/gtest.h>

#include <random>

#include "operator/kube/watch_decoder.h"

namespace valley::kube {
namespace {

using json = nlohmann::json;

const FieldMask kPodLike = FieldMask::only({
    {"kind", FieldMask::all()},
    {"metadata", FieldMask::all_except({"managedFields", "annotations"})},
    {"spec", FieldMask::only({{"nodeName", FieldMask::all()},
                              {"containers", FieldMask::only({{"name", FieldMask::all()}, {"resources", FieldMask::all()}})}})},
});

TEST(FieldMask, KeepsTheNamedMembersAndDropsTheRest) {
  const std::string text = R"({"kind":"Pod","apiVersion":"v1",
    "metadata":{"name":"a","annotations":{"x":"y"},"managedFields":[{"manager":"m"}],"labels":{"l":"1"}},
    "spec":{"nodeName":"n1","volumes":[{"name":"v"}],"containers":[{"name":"c","image":"i","resources":{"limits":{"g":"1"}}},
            {"name":"d","env":[{"name":"E"}]}]},
    "status":{"phase":"Running"}})";
  const json expected = json::parse(R"({"kind":"Pod","metadata":{"name":"a","labels":{"l":"1"}},
    "spec":{"nodeName":"n1","containers":[{"name":"c","resources":{"limits":{"g":"1"}}},{"name":"d"}]}})");
  EXPECT_EQ(kPodLike.parse(text), expected);
  json applied = json::parse(text);
  kPodLike.apply(applied);
  EXPECT_EQ(applied, expected);
}

TEST(FieldMask, ScalarsAndOddShapesAreKeptWhole) {
  EXPECT_EQ(kPodLike.parse("3"), json(3));
  EXPECT_EQ(kPodLike.parse(R"([{"kind":"a","x":1},2,[{"kind":"b","y":2}]])"), json::parse(R"([{"kind":"a"},2,[{"kind":"b"}]])"));
  EXPECT_EQ(kPodLike.parse(R"({"spec":"s","metadata":null})"), json::parse(R"({"spec":"s","metadata":null})"));
  EXPECT_EQ(FieldMask::all().parse(R"({"a":[1,{"b":null}],"c":1.5,"d":true,"e":-7,"f":18446744073709551615})"),
            json::parse(R"({"a":[1,{"b":null}],"c":1.5,"d":true,"e":-7,"f":18446744073709551615})"));
}

TEST(FieldMask, ARepeatedKeyKeepsTheLastAsJsonParseDoes) {
  const std::string text = R"({"kind":"a","kind":"b","spec":{"nodeName":"x"},"spec":{"nodeName":"y","volumes":[]}})";
  json applied = json::parse(text);
  kPodLike.apply(applied);
  EXPECT_EQ(kPodLike.parse(text), applied);
  EXPECT_EQ(applied["kind"], "b");
}

TEST(FieldMask, TextThatIsNotJsonIsDiscarded) {
  for (const char* bad : {"", "{", R"({"kind":})", R"({"kind":"a"} x)", R"({"spec":{"volumes":[1,}})", "nul"})
    EXPECT_TRUE(kPodLike.parse(bad).is_discarded()) << bad;
}

// Random documents under random masks: parsing with the mask builds what parsing whole and then
// applying the mask leaves.
// Keys and strings that need escapes in JSON text (a quote, a backslash, a tab, non-ASCII).
const char* const kKeys[] = {"a", "b", "c", "kind", "metadata", "spec", "k\"q", "b\\s", "t\tab", "\u00e9t\u00e9"};

json random_value(std::mt19937& rng, int depth) {
  switch (depth <= 0 ? rng() % 5 : rng() % 7) {
    case 0: return nullptr;
    case 1: return static_cast<int>(rng() % 100) - 50;
    case 2: return std::string(1 + rng() % 20, 'x');
    case 4: return std::string(kKeys[rng() % 10]) + "}]{[,:";
    case 3: return rng() % 2 == 0 ? json(rng() % 2 == 0) : json(0.25 * static_cast<double>(rng() % 64) - 3.0);
    case 5: {
      json a = json::array();
      for (int i = 0, n = static_cast<int>(rng() % 4); i < n; ++i) a.push_back(random_value(rng, depth - 1));
      return a;
    }
    default: {
      json o = json::object();
      for (int i = 0, n = static_cast<int>(rng() % 5); i < n; ++i) o[kKeys[rng() % 10]] = random_value(rng, depth - 1);
      return o;
    }
  }
}

FieldMask random_mask(std::mt19937& rng, int depth) {
  switch (depth <= 0 ? 0 : rng() % 3) {
    case 0: return FieldMask::all();
    case 1: {
      std::vector<std::string> names;
      for (int i = 0, n = static_cast<int>(rng() % 3); i < n; ++i) names.push_back(kKeys[rng() % 10]);
      return FieldMask::all_except(names);
    }
    default: {
      std::vector<std::pair<std::string, FieldMask>> members;
      for (int i = 0, n = static_cast<int>(rng() % 4); i < n; ++i)
        members.emplace_back(kKeys[rng() % 10], random_mask(rng, depth - 1));
      return FieldMask::only(std::move(members));
    }
  }
}

TEST(FieldMask, ParsingWithAMaskEqualsParsingWholeThenApplyingIt) {
  std::mt19937 rng(21);
  for (int round = 0; round < 2000; ++round) {
    const json doc = random_value(rng, 5);
    const FieldMask mask = random_mask(rng, 4);
    json applied = doc;
    mask.apply(applied);
    ASSERT_EQ(mask.parse(doc.dump()), applied) << "round " << round << ": " << doc.dump();
    ASSERT_EQ(mask.parse(doc.dump(1 + static_cast<int>(rng() % 2), '\t' )), applied) << "round " << round << " with white space";
    ASSERT_EQ(mask.parse(doc.dump(-1, ' ', /*ensure_ascii=*/true)), applied) << "round " << round << " with \\u escapes";
  }
}

// Damaged text (bytes changed, cut short): never a crash or a read past the end; what json::parse
// accepts comes out as parse-then-apply; what it refuses may come out only where the damage is in a
// dropped value, which is skimmed (closed strings and matching brackets are all it checks there).
TEST(FieldMask, DamagedTextIsReadSafelyAndWhatIsStillJsonComesOutTheSame) {
  std::mt19937 rng(25);
  const char damage[] = "{}[]\",:\\ 0an";
  for (int round = 0; round < 3000; ++round) {
    std::string text = random_value(rng, 4).dump();
    for (int k = 0, n = 1 + static_cast<int>(rng() % 3); k < n && !text.empty(); ++k)
      text[rng() % text.size()] = damage[rng() % (sizeof damage - 1)];
    if (rng() % 4 == 0) text.resize(rng() % (text.size() + 1));
    const FieldMask mask = random_mask(rng, 3);
    const json got = mask.parse(text);
    json whole = json::parse(text, nullptr, false);
    if (whole.is_discarded()) continue;
    mask.apply(whole);
    ASSERT_EQ(got, whole) << "round " << round << ": " << text;
  }
}

TEST(FieldMask, DeepNestingIsKeptWholeBelowALimitInsteadOfExhaustingTheStack) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const json got = kPodLike.parse(deep);
  ASSERT_TRUE(got.is_array());
  const std::string shallow = R"([[{"kind":"a","x":1}]])";
  EXPECT_EQ(kPodLike.parse(shallow), json::parse(R"([[{"kind":"a"}]])"));
}

TEST(FieldMask, AWatchDecoderBuildsMaskedObjectsButErrorStatusesWhole) {
  std::vector<WatchEvent> events;
  WatchDecoder decoder([&](WatchEvent&& e) {
    events.push_back(std::move(e));
    return true;
  }, std::make_shared<const FieldMask>(kPodLike));
  decoder.feed(R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a","annotations":{"x":"y"}},"status":{"phase":"Running"}}})"
               "\n"
               R"({"type":"ERROR","object":{"kind":"Status","status":"Failure","message":"too old","reason":"Expired","code":410}})"
               "\n{not json}\n"
               R"({"type":{"ERROR":1},"object":{"kind":"Pod"}})"  // found by the fuzzer: a type that is no string
               "\n");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].object, json::parse(R"({"kind":"Pod","metadata":{"name":"a"}})"));
  EXPECT_EQ(events[1].type, "ERROR");
  EXPECT_EQ(events[1].object.value("code", 0), 410);
  EXPECT_EQ(events[1].object.value("reason", ""), "Expired");
  EXPECT_EQ(decoder.malformed(), 2u);
}

}  // namespace
}  // namespace valley::kube
