// libFuzzer target: an S3 ListObjectsV2 page and an error body as Valley reads them from a store a
// tenant names (so anything). A page is read or refused with a StoreError saying why, never another
// exception; what it lists lies under the prefix; an error's excerpt is bounded, valid UTF-8 text.
#include "operator/storage/s3_xml.h"
#include "operator/text.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace valley;
  const std::string text = fuzz::text_of(data, size);
  try {
    const auto page = storage::parse_list_page(text, "team/", "s3://bkt/team");
    for (const auto& o : page.objects) FUZZ_REQUIRE(!o.key.empty() && o.key.back() != '/', o.key);
  } catch (const storage::StoreError& e) {
    FUZZ_REQUIRE(std::string(e.what()).rfind("LIST s3://bkt/team: ", 0) == 0, e.what());
  } catch (const std::exception& e) {
    fuzz::violated("only a StoreError leaves the listing parser", e.what());
  }
  const std::string excerpt = storage::s3_error_excerpt(text);
  FUZZ_REQUIRE(excerpt.size() <= 402 && utf8_valid(excerpt), excerpt);
  (void)storage::xml_text(text);
  return 0;
}
