#include "operator/storage/s3_xml.h"

#include <charconv>
#include <cstdint>

#include "operator/text.h"

namespace valley::storage {

std::string xml_element(const std::string& xml, const std::string& name) {
  const std::string open = "<" + name + ">", close = "</" + name + ">";
  size_t a = xml.find(open), b = a == std::string::npos ? a : xml.find(close, a);
  return b == std::string::npos ? std::string() : xml.substr(a + open.size(), b - a - open.size());
}

namespace {
// "#34" or "#x22": the character, 0 when it is not one byte's worth of a number.
char numeric_entity(const std::string& name) {
  if (name.size() < 2 || name[0] != '#') return 0;
  const bool hex = name[1] == 'x' || name[1] == 'X';
  const char* first = name.data() + (hex ? 2 : 1);
  const char* last = name.data() + name.size();
  unsigned value = 0;
  auto [end, ec] = std::from_chars(first, last, value, hex ? 16 : 10);
  if (ec != std::errc() || end != last || first == last || value == 0 || value > 0x7F) return 0;
  return static_cast<char>(value);
}
}  // namespace

std::string xml_text(const std::string& s) {
  static const std::pair<std::string, char> kNamed[] = {{"quot", '"'}, {"apos", '\''}, {"lt", '<'}, {"gt", '>'}, {"amp", '&'}};
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const size_t end = s[i] == '&' ? s.find(';', i) : std::string::npos;
    if (end == std::string::npos || end - i > 10) {
      out += s[i];
      continue;
    }
    const std::string name = s.substr(i + 1, end - i - 1);
    char c = numeric_entity(name);
    for (const auto& [n, ch] : kNamed)
      if (n == name) c = ch;
    if (!c) {
      out += s[i];
      continue;
    }
    out += c;
    i = end;
  }
  return out;
}

std::string s3_error_excerpt(const std::string& body) {
  if (std::string code = xml_element(body, "Code"); !code.empty()) {
    std::string message = xml_element(body, "Message");
    return bounded_text(code, 100) + (message.empty() ? "" : ": " + bounded_text(message, 300));
  }
  // What answered is not an S3 store; what it said is not for the task's status to repeat (an
  // endpoint a tenant names may be anything the operator can reach).
  return "an answer that is not an S3 error (" + std::to_string(body.size()) + " bytes)";
}

ListPage parse_list_page(const std::string& xml, const std::string& prefix, const std::string& where) {
  ListPage page;
  for (size_t at = xml.find("<Contents>"); at != std::string::npos; at = xml.find("<Contents>", at + 1)) {
    const size_t close = xml.find("</Contents>", at);
    if (close == std::string::npos) throw StoreError("LIST " + where + ": a listing that ends inside an object");
    const std::string item = xml.substr(at, close - at);
    ObjectInfo o;
    const std::string key = xml_text(xml_element(item, "Key"));
    if (key.compare(0, prefix.size(), prefix) != 0)
      throw StoreError("LIST " + where + ": an object outside the listed prefix: " + bounded_text(key, 200));
    o.key = key.substr(prefix.size());
    const std::string size = xml_element(item, "Size");
    if (!size.empty()) {
      auto [end, ec] = std::from_chars(size.data(), size.data() + size.size(), o.size);
      if (ec != std::errc() || end != size.data() + size.size())
        throw StoreError("LIST " + where + ": an object size that is not a number: " + bounded_text(size, 40));
    }
    o.etag = xml_text(xml_element(item, "ETag"));
    if (o.etag.size() >= 2 && o.etag.front() == '"' && o.etag.back() == '"') o.etag = o.etag.substr(1, o.etag.size() - 2);
    // Some stores (versitygw on a file system without extended attributes) list no ETag: the time
    // it was last written stands in as the object's version.
    if (o.etag.empty()) o.etag = "modified:" + xml_element(item, "LastModified");
    if (!o.key.empty() && o.key.back() != '/') page.objects.push_back(std::move(o));
  }
  page.truncated = xml_element(xml, "IsTruncated") == "true";
  page.next_token = xml_text(xml_element(xml, "NextContinuationToken"));
  return page;
}

}  // namespace valley::storage
