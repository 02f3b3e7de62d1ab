#include "operator/kube/base64.h"

#include <gtest/gtest.h>

namespace valley::kube {
namespace {

TEST(Base64, RoundTripsAllLengthsAndBytes) {
  std::string bytes;
  for (int i = 0; i < 300; ++i) {
    bytes.push_back(static_cast<char>((i * 37) & 0xFF));
    auto decoded = base64_decode(base64_encode(bytes));
    ASSERT_TRUE(decoded.has_value()) << "length " << bytes.size();
    EXPECT_EQ(*decoded, bytes);
  }
}

TEST(Base64, KnownVectors) {  // RFC 4648 section 10
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64_decode("Zm9vYg==").value(), "foob");
}

TEST(Base64, IgnoresLineBreaks) { EXPECT_EQ(base64_decode("Zm9v\nYmFy\r\n").value(), "foobar"); }

TEST(Base64, RejectsInvalidInput) {
  EXPECT_FALSE(base64_decode("Zm9v!").has_value());
  EXPECT_FALSE(base64_decode("Zm9").has_value());      // not a multiple of 4
  EXPECT_FALSE(base64_decode("Zg==Zg==").has_value()); // data after padding
  EXPECT_FALSE(base64_decode("Z===").has_value());
}

}  // namespace
}  // namespace valley::kube
