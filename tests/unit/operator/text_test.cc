// Clipping text for statuses and Events never splits a UTF-8 character.
#include "operator/text.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace valley {
namespace {

TEST(Utf8Clip, CutsOnCharacterBoundariesSoTheResultIsStillJsonText) {
  const std::string s = "ab\xC3\xA9" "cd\xE2\x82\xAC";  // "abécd€": é is 2 bytes, € is 3
  EXPECT_EQ(utf8_head(s, 100), s);
  EXPECT_EQ(utf8_head(s, 3), "ab") << "not half of é";
  EXPECT_EQ(utf8_head(s, 4), "ab\xC3\xA9");
  EXPECT_EQ(utf8_tail(s, 2), "") << "not the last two bytes of €";
  EXPECT_EQ(utf8_tail(s, 3), "\xE2\x82\xAC");
  EXPECT_EQ(utf8_tail(s, 6), "cd\xE2\x82\xAC") << "not the second byte of é";
  EXPECT_EQ(utf8_length(s), 6u) << "a b é c d €: 6 characters in 9 bytes";
  for (size_t n = 0; n <= s.size(); ++n) {
    EXPECT_NO_THROW(nlohmann::json(utf8_head(s, n)).dump()) << n;
    EXPECT_NO_THROW(nlohmann::json(utf8_tail(s, n)).dump()) << n;
  }
}

}  // namespace
}  // namespace valley
