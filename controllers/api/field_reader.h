// Reading an API object's fields with their paths in errors ("spec.gpu[1].spot: must be ..."):
// each reader returns the default and records an error when a field is of the wrong type or out of
// range, so one pass reports every problem. Shared by the API types' parsers (controllers/api/).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "controllers/api/money.h"

namespace valley::api {

using json = nlohmann::json;

struct FieldReader {
  std::vector<std::string>& errors;
  void error(const std::string& e) { errors.push_back(e); }
  std::string str(const json& o, const char* key, const std::string& path, const std::string& def = "") {
    if (!o.contains(key)) return def;
    if (!o[key].is_string()) {
      error(path + ": must be a string");
      return def;
    }
    return o[key].get<std::string>();
  }
  Micros money(const json& o, const char* key, const std::string& path, bool required) {
    if (!o.contains(key)) {
      if (required) error(path + ": required");
      return 0;
    }
    auto m = o[key].is_string() ? parse_money(o[key].get<std::string>()) : std::nullopt;
    if (!m) error(path + ": must be an amount like \"2.40\" (a string, up to 6 decimals)");
    return m.value_or(0);
  }
  int64_t milli(const json& o, const char* key, const std::string& path, int64_t def) {
    if (!o.contains(key)) return def;
    auto m = o[key].is_string() ? parse_milli(o[key].get<std::string>()) : std::nullopt;
    if (!m) error(path + ": must be a decimal like \"1.5\" (a string, up to 3 decimals)");
    return m.value_or(def);
  }
  int integer(const json& o, const char* key, const std::string& path, int def, int lo, int hi) {
    if (!o.contains(key)) return def;
    if (!o[key].is_number_integer() || o[key].get<int64_t>() < lo || o[key].get<int64_t>() > hi) {
      error(path + ": must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
      return def;
    }
    return o[key].get<int>();
  }
  // A `match: {vendor, product}` selector; absent fields match anything.
  void match(const json& o, const std::string& path, std::string* vendor, std::string* product) {
    if (!o.contains("match") || !o["match"].is_object()) return;
    *vendor = str(o["match"], "vendor", path + ".match.vendor");
    *product = str(o["match"], "product", path + ".match.product");
  }
  // Calls f(item, "path[i]") for each item of the list o[key].
  template <typename F>
  void each(const json& o, const char* key, const std::string& path, F f) {
    if (const json* a = array(o, key, path))
      for (size_t i = 0; i < a->size(); ++i) f((*a)[i], path + "[" + std::to_string(i) + "]");
  }
  const json* array(const json& o, const char* key, const std::string& path) {
    if (!o.contains(key)) return nullptr;
    if (!o[key].is_array()) {
      error(path + ": must be a list");
      return nullptr;
    }
    return &o[key];
  }
};

}  // namespace valley::api
