// The S3 answers Valley reads, as text: a ListObjectsV2 page, an error's Code and Message, one
// element of a small answer (an upload's id). The endpoint is named by a tenant and may send
// anything: a page that cannot be read is a StoreError saying so, never another exception, and no
// text read from it is longer than the answer or invalid UTF-8 once repaired by the caller.
#pragma once

#include <string>
#include <vector>

#include "operator/storage/object_store.h"

namespace valley::storage {

// The text between the first <name> and the </name> after it; "" when there is none.
std::string xml_element(const std::string& xml, const std::string& name);
// XML character data decoded: the five named entities and numeric ones (Go's encoder writes
// "&#34;"); an entity it cannot decode (out of range, not a number) is kept as written.
std::string xml_text(const std::string& s);
// An S3 error's Code and Message (its RequestId and HostId change with every request, and an error
// that reads differently each time would be reported again at every poll); of another body only
// its size (what answered is not a store, and its words are not the task's to read).
std::string s3_error_excerpt(const std::string& body);

struct ListPage {
  std::vector<ObjectInfo> objects;  // under `prefix`, the prefix taken off; "dir/" markers left out
  bool truncated = false;
  std::string next_token;
};
// One ListObjectsV2 page of the listing of `prefix` at `where` (for the error's words).
ListPage parse_list_page(const std::string& xml, const std::string& prefix, const std::string& where);

}  // namespace valley::storage
