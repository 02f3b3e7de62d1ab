#include "operator/kube/label_selector.h"

#include <algorithm>
#include <regex>

namespace valley::kube {

namespace {

// The terms between the commas outside parentheses; false when the parentheses do not balance.
bool split_terms(const std::string& s, std::vector<std::string>* terms) {
  int depth = 0;
  std::string term;
  for (char c : s) {
    if (c == '(') ++depth;
    if (c == ')' && --depth < 0) return false;
    if (c == ',' && depth == 0) {
      terms->push_back(term);
      term.clear();
    } else {
      term += c;
    }
  }
  terms->push_back(term);
  return depth == 0;
}

std::vector<std::string> set_values(const std::string& list) {
  static const std::regex value("[^,\\s]+");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(list.begin(), list.end(), value); it != std::sregex_iterator(); ++it) out.push_back(it->str());
  return out;
}

}  // namespace

std::optional<std::vector<LabelRequirement>> parse_label_selector(const std::string& selector) {
  std::vector<LabelRequirement> out;
  if (selector.find_first_not_of(" \t") == std::string::npos) return out;
  // A qualified name (an optional DNS-subdomain prefix and '/', then 63 characters at most of
  // alphanumerics, '-', '_' and '.', alphanumeric at both ends) and a value (the same, or empty).
  static const std::string name = "[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?";
  static const std::string key = "((?:[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?/)?" + name + ")";
  static const std::string value = "(?:" + name + ")?";
  static const std::regex exists("\\s*(!?)\\s*" + key + "\\s*");
  static const std::regex equals("\\s*" + key + "\\s*(=|==|!=)\\s*(" + value + ")\\s*");
  static const std::regex set("\\s*" + key + "\\s+(in|notin)\\s*\\(\\s*(" + value + "(?:\\s*,\\s*" + value + ")*)\\s*\\)\\s*");
  std::vector<std::string> terms;
  if (!split_terms(selector, &terms)) return std::nullopt;
  for (const auto& t : terms) {
    std::smatch m;
    if (std::regex_match(t, m, exists)) {
      out.push_back({m[2], m[1].length() ? "DoesNotExist" : "Exists", {}});
    } else if (std::regex_match(t, m, equals)) {
      out.push_back({m[1], m[2] == "!=" ? "NotIn" : "In", {m[3]}});
    } else if (std::regex_match(t, m, set)) {
      out.push_back({m[1], m[2] == "in" ? "In" : "NotIn", set_values(m[3])});
    } else {
      return std::nullopt;
    }
  }
  return out;
}

bool selects_labels(const std::vector<LabelRequirement>& requirements, const std::map<std::string, std::string>& labels) {
  for (const auto& r : requirements) {
    auto it = labels.find(r.key);
    const bool has = it != labels.end();
    const bool listed = has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    if ((r.op == "In" && !listed) || (r.op == "NotIn" && listed) || (r.op == "Exists" && !has) || (r.op == "DoesNotExist" && has)) return false;
  }
  return true;
}

}  // namespace valley::kube
