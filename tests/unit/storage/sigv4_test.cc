#include "operator/storage/sigv4.h"

#include <gtest/gtest.h>

namespace valley::storage {
namespace {

// AWS Signature Version 4 test suite, "get-vanilla": credentials AKIDEXAMPLE, region us-east-1,
// service "service".
TEST(SigV4, AwsTestSuiteGetVanilla) {
  SignedRequest r;
  r.method = "GET";
  r.path = "/";
  r.headers = {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}};
  r.payload_sha256 = sha256_hex("");
  std::string canonical = canonical_request(r);
  EXPECT_EQ(canonical,
            "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  std::string to_sign = string_to_sign(canonical, "20150830T123600Z", "20150830/us-east-1/service/aws4_request");
  EXPECT_EQ(to_sign,
            "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
            "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63");
  EXPECT_EQ(signature("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20150830T123600Z", "us-east-1", "service", to_sign),
            "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}

// The S3 documentation's example: GET /test.txt with a Range header (examplebucket, 2013-05-24).
TEST(SigV4, S3DocumentationGetObject) {
  SignedRequest r;
  r.method = "GET";
  r.path = "/test.txt";
  r.headers = {{"host", "examplebucket.s3.amazonaws.com"}, {"range", "bytes=0-9"}};
  sign(r, {"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""}, "us-east-1", "s3", "20130524T000000Z");
  const std::string& auth = r.headers.at("Authorization");
  EXPECT_NE(auth.find("Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request"), std::string::npos) << auth;
  EXPECT_NE(auth.find("SignedHeaders=host;range;x-amz-content-sha256;x-amz-date"), std::string::npos) << auth;
  EXPECT_NE(auth.find("Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"), std::string::npos) << auth;
  EXPECT_EQ(r.headers.at("x-amz-content-sha256"), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(SigV4, QueryIsSortedAndEncoded) {
  SignedRequest r;
  r.path = "/bucket/a b/c+d";
  r.query = {{"prefix", "x/y z"}, {"list-type", "2"}};
  r.headers = {{"host", "h"}};
  r.payload_sha256 = "UNSIGNED-PAYLOAD";
  std::string c = canonical_request(r);
  EXPECT_NE(c.find("\n/bucket/a%20b/c%2Bd\n"), std::string::npos) << c;
  EXPECT_NE(c.find("\nlist-type=2&prefix=x%2Fy%20z\n"), std::string::npos) << c;
}

TEST(SigV4, HeaderValuesTrimmedAndFolded) {
  SignedRequest r;
  r.headers = {{"Host", "h"}, {"X-Amz-Meta-Note", "  a   b  "}};
  r.payload_sha256 = "x";
  EXPECT_NE(canonical_request(r).find("x-amz-meta-note:a b\n"), std::string::npos);
}

TEST(SigV4, SessionTokenIsSigned) {
  SignedRequest r;
  r.headers = {{"host", "h"}};
  sign(r, {"AK", "SK", "TOKEN"}, "eu-west-1", "s3", "20260101T000000Z");
  EXPECT_EQ(r.headers.at("x-amz-security-token"), "TOKEN");
  EXPECT_NE(r.headers.at("Authorization").find("x-amz-security-token"), std::string::npos);
}

TEST(SigV4, RejectsMalformedDate) {
  SignedRequest r;
  EXPECT_THROW(sign(r, {"a", "b", ""}, "us-east-1", "s3", "2026-01-01"), std::invalid_argument);
}

}  // namespace
}  // namespace valley::storage
