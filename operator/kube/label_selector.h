// A Kubernetes label selector string (what `kubectl -l` and a list's labelSelector take): terms
// separated by commas, each `key`, `!key`, `key=value`, `key==value`, `key!=value`,
// `key in (v1,v2)` or `key notin (v1,v2)`. Parsed here so that a flag with a typo fails at start
// with its own words instead of as an API server's 400 on every list, and so that what selects
// nodes can also be written as a pod's required node affinity.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace valley::kube {

// One term, in node affinity's words: op is In, NotIn, Exists or DoesNotExist (values empty for
// the last two).
struct LabelRequirement {
  std::string key, op;
  std::vector<std::string> values;
  bool operator==(const LabelRequirement&) const = default;
};

// The terms of `selector` ("" selects everything: no term), or nullopt when the API server would
// refuse it.
std::optional<std::vector<LabelRequirement>> parse_label_selector(const std::string& selector);
// Whether labels satisfy every requirement (as the API server's list would select them).
bool selects_labels(const std::vector<LabelRequirement>& requirements, const std::map<std::string, std::string>& labels);
inline bool valid_label_selector(const std::string& selector) { return parse_label_selector(selector).has_value(); }

}  // namespace valley::kube
