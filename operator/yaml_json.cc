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

void emit(YAML::Emitter& out, const json& v) {
  if (v.is_object()) {
    out << YAML::BeginMap;
    for (const auto& [k, x] : v.items()) {
      out << YAML::Key << k << YAML::Value;
      emit(out, x);
    }
    out << YAML::EndMap;
  } else if (v.is_array()) {
    out << YAML::BeginSeq;
    for (const auto& x : v) emit(out, x);
    out << YAML::EndSeq;
  } else if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    // Strings that would read back as another type are quoted.
    bool plain = false;
    try {
      YAML::Node n = YAML::Load(s);
      plain = !s.empty() && n.IsScalar() && scalar(n) == json(s);
    } catch (const YAML::Exception&) {
    }
    if (!plain) out << YAML::DoubleQuoted;
    out << s;
  } else if (v.is_boolean()) {
    out << (v.get<bool>() ? "true" : "false");
  } else if (v.is_null()) {
    out << YAML::Null;
  } else {
    out << v.dump();
  }
}

}  // namespace

std::string to_yaml(const json& value) {
  YAML::Emitter out;
  emit(out, value);
  return std::string(out.c_str()) + "\n";
}

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
