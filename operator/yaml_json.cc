#include "operator/yaml_json.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <regex>

namespace valley {
namespace {

using json = nlohmann::json;

json scalar(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted
  static const std::regex integer("^[-+]?[0-9]+$"), real("^[-+]?([0-9]+\\.[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?$");
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (std::regex_match(s, integer)) {
    errno = 0;
    long long v = std::strtoll(s.c_str(), nullptr, 10);
    if (errno == 0) return v;
  }
  if (std::regex_match(s, real)) return std::strtod(s.c_str(), nullptr);
  return s;
}

json convert(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& kv : n) o[kv.first.as<std::string>()] = convert(kv.second);
      return o;
    }
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (const auto& item : n) a.push_back(convert(item));
      return a;
    }
    case YAML::NodeType::Scalar:
      return scalar(n);
    default:
      return nullptr;
  }
}

}  // namespace

std::optional<std::vector<YamlDocument>> parse_yaml(const std::string& text, std::string* error) {
  try {
    std::vector<YamlDocument> out;
    for (const auto& doc : YAML::LoadAll(text)) {
      if (!doc || doc.IsNull()) continue;
      YamlDocument d;
      d.value = convert(doc);
      if (doc.IsMap())
        for (const auto& kv : doc) d.key_lines.push_back({kv.first.as<std::string>(), kv.first.Mark().line + 1});
      out.push_back(std::move(d));
    }
    return out;
  } catch (const YAML::Exception& e) {
    if (error) *error = "line " + std::to_string(e.mark.line + 1) + ", column " + std::to_string(e.mark.column + 1) + ": " + e.msg;
    return std::nullopt;
  }
}

}  // namespace valley
