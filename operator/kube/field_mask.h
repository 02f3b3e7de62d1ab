// Which fields of a JSON object a cache keeps (controller-runtime's cache transform, as data), and
// a parser that builds only those: a watch event's pod is ~7 KB of JSON of which Valley keeps about
// a third, and building the whole tree to drop most of it was the pod informer's main cost.
//
// A mask is one of: everything (the value whole), only the named members (each with its own mask),
// or everything but the named members. A mask applies to an object's members; on an array it
// applies to each element; scalars are always kept whole. `apply` and `parse` keep exactly the same
// fields: parse(text) == apply(json::parse(text)).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace valley::kube {

class FieldMask {
 public:
  static FieldMask all();
  static FieldMask only(std::vector<std::pair<std::string, FieldMask>> members);
  static FieldMask all_except(std::vector<std::string> names);

  // The mask of member `name`, or nullptr when it is dropped.
  const FieldMask* member(std::string_view name) const;
  // Keeps every value whole.
  bool whole() const { return kind_ == Kind::All; }

  // Drops in place what the mask does not keep.
  void apply(nlohmann::json& value) const;

  // Parses `text` keeping only what the mask keeps; what is dropped is skimmed over, never built.
  // Returns a discarded value (is_discarded()) when the text is not JSON; inside a dropped value only
  // closed strings and matching brackets are checked. Values nested deeper than 256 are kept whole.
  nlohmann::json parse(std::string_view text) const;

 private:
  enum class Kind { All, Only, AllExcept };
  Kind kind_ = Kind::All;
  std::map<std::string, FieldMask, std::less<>> members_;  // Only: kept members; AllExcept: dropped ones
};

}  // namespace valley::kube
