#include "operator/flags.h"

#include <algorithm>
#include <cstdlib>

namespace valley {

const FlagSpec* Flags::find(const std::string& name) const {
  for (const auto& s : specs_)
    if (s.name == name) return &s;
  return nullptr;
}

std::vector<std::string> Flags::parse(int argc, char** argv, int first) {
  std::vector<std::string> positional;
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      for (++i; i < argc; ++i) positional.emplace_back(argv[i]);
      break;
    }
    if (arg.rfind("--", 0) != 0 || arg.size() == 2) {
      positional.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const FlagSpec* spec = find(name);
    if (spec == nullptr) throw std::invalid_argument("unknown flag --" + name);
    if (!value) {
      if (spec->is_bool) {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        throw std::invalid_argument("flag --" + name + " needs a value");
      }
    }
    if (spec->is_bool && *value != "true" && *value != "false")
      throw std::invalid_argument("flag --" + name + " takes true or false, not \"" + *value + "\"");
    values_[name] = *value;
  }
  return positional;
}

std::string Flags::get(const std::string& name) const {
  const FlagSpec* spec = find(name);
  if (spec == nullptr) throw std::logic_error("flag --" + name + " was never declared");
  if (auto it = values_.find(name); it != values_.end()) return it->second;
  std::string env = "VALLEY_" + name;
  std::transform(env.begin(), env.end(), env.begin(), [](unsigned char c) {
    return c == '-' ? '_' : static_cast<char>(std::toupper(c));
  });
  if (const char* v = std::getenv(env.c_str()); v != nullptr) return v;
  return spec->default_value;
}

bool Flags::get_bool(const std::string& name) const { return get(name) == "true"; }

std::string Flags::usage() const {
  std::string out;
  for (const auto& s : specs_) {
    out += "  --" + s.name + (s.is_bool ? "" : "=VALUE");
    out += "\n      " + s.help;
    if (!s.default_value.empty()) out += " (default: " + s.default_value + ")";
    out += "\n";
  }
  return out;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::string item;
  auto flush = [&] {
    auto b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
    item.clear();
  };
  for (char c : text) {
    if (c == ',') {
      flush();
    } else {
      item += c;
    }
  }
  flush();
  return out;
}

}  // namespace valley
