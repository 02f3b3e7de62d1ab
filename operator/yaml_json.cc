#include "operator/yaml_json.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <regex>
#include <sstream>

#include "operator/json_text.h"

namespace valley {
namespace {

using json = nlohmann::json;

// The line (1-based) of the first byte that does not belong to well-formed UTF-8, or 0. YAML text
// is Unicode, and JSON strings must be UTF-8: nlohmann's dump() throws on anything else, later,
// far from the file that caused it.
int first_bad_utf8_line(const std::string& text) {
  int line = 1;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (len == 0 || i + len > text.size()) return line;
    uint32_t cp = len == 1 ? c : c & (0x7f >> len);
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + k]);
      if ((cc >> 6) != 0x2) return line;
      cp = (cp << 6) | (cc & 0x3f);
    }
    // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8 either.
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return line;
    if (c == '\n') ++line;
    i += len;
  }
  return 0;
}


json scalar(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted
  // YAML 1.2's core schema, as kubectl (go-yaml) reads plain scalars: 1e3 is a number too.
  static const std::regex integer("^[-+]?[0-9]+$"), real("^[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?$");
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (std::regex_match(s, integer)) {
    errno = 0;
    long long v = std::strtoll(s.c_str(), nullptr, 10);
    if (errno == 0) return v;
  }
  if (std::regex_match(s, real)) {
    // JSON has no infinity: a number too large for a double stays the text it was.
    double v = std::strtod(s.c_str(), nullptr);
    if (std::isfinite(v)) return v;
  }
  return s;
}

// Aliases let a few lines stand for an exponential number of values ("billion laughs"); JSON has
// no aliases, so conversion expands them, and stops here.
constexpr size_t kMaxValues = 1'000'000;
// An anchor's alias inside its own collection ("&a [*a]") makes yaml-cpp build a cycle, which no
// value count stops before the stack does; a nesting limit stops it, and any honest document
// (Kubernetes objects nest a few dozen levels) stays far below it.
constexpr size_t kMaxDepth = 256;

struct TooLarge {
  YAML::Mark mark;
};
struct TooDeep {
  YAML::Mark mark;
};
// A string that is not UTF-8 after decoding (the text was, but an escape or another encoding the
// parser detected from the first bytes made it something else).
struct NotUtf8 {
  YAML::Mark mark;
};

const std::string& checked(const std::string& s, const YAML::Mark& mark) {
  if (first_bad_utf8_line(s)) throw NotUtf8{mark};
  return s;
}

json convert(const YAML::Node& n, size_t& values, size_t depth = 0) {
  if (++values > kMaxValues) throw TooLarge{n.Mark()};
  if (depth > kMaxDepth) throw TooDeep{n.Mark()};
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& kv : n) o[checked(kv.first.as<std::string>(), kv.first.Mark())] = convert(kv.second, values, depth + 1);
      return o;
    }
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (const auto& item : n) a.push_back(convert(item, values, depth + 1));
      return a;
    }
    case YAML::NodeType::Scalar:
      checked(n.Scalar(), n.Mark());
      return scalar(n);
    default:
      return nullptr;
  }
}

void emit_string(YAML::Emitter& out, const std::string& s) {
  // Strings that would read back as another type are quoted; so are strings with control
  // characters or surrounding blanks, which plain style mangles.
  bool plain = false;
  const bool printable = std::none_of(s.begin(), s.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c < 0x20 || c == 0x7f;
  });
  if (printable && !s.empty() && s.front() != ' ' && s.back() != ' ') {
    try {
      YAML::Node n = YAML::Load(s);
      plain = n.IsScalar() && scalar(n) == json(s);
    } catch (const YAML::Exception&) {
    }
  }
  if (!plain) out << YAML::DoubleQuoted;
  out << s;
}

void emit(YAML::Emitter& out, const json& v) {
  if (v.is_object()) {
    out << YAML::BeginMap;
    for (const auto& [k, x] : v.items()) {
      // YAML limits implicit keys to 1024 characters as written; escapes ("\x00") make a key up to
      // 4 times longer, so past 250 bytes the explicit "? key" form is used.
      if (k.size() > 250) out << YAML::LongKey;
      out << YAML::Key;
      emit_string(out, k);
      out << YAML::Value;
      emit(out, x);
    }
    out << YAML::EndMap;
  } else if (v.is_array()) {
    out << YAML::BeginSeq;
    for (const auto& x : v) emit(out, x);
    out << YAML::EndSeq;
  } else if (v.is_string()) {
    emit_string(out, v.get_ref<const std::string&>());
  } else if (v.is_boolean()) {
    out << (v.get<bool>() ? "true" : "false");
  } else if (v.is_null()) {
    out << YAML::Null;
  } else {
    out << json_text(v);
  }
}

// yaml-cpp 0.7's LoadAll loops for ever, allocating, on some malformed streams (a lone ',': upstream
// issue jbeder/yaml-cpp#1040, fixed after 0.8 by PR #1319): the parser reports a new document
// without consuming anything. This pass walks the documents with events only and stops at the
// first one that starts where the previous one did.
class ProgressCheck : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    stalled_ = started_ && mark.pos == last_.pos;
    started_ = true;
    last_ = mark;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
  bool stalled() const { return stalled_; }
  const YAML::Mark& where() const { return last_; }

 private:
  bool started_ = false, stalled_ = false;
  YAML::Mark last_;
};

std::string at(const YAML::Mark& mark) {
  return "line " + std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1);
}

}  // namespace

std::string to_yaml(const json& value) {
  YAML::Emitter out;
  emit(out, value);
  return std::string(out.c_str()) + "\n";
}

std::optional<std::vector<YamlDocument>> parse_yaml(const std::string& text, std::string* error) {
  if (int line = first_bad_utf8_line(text)) {
    if (error) *error = "line " + std::to_string(line) + ": not UTF-8 text";
    return std::nullopt;
  }
  try {
    {
      std::istringstream stream(text);
      YAML::Parser parser(stream);
      ProgressCheck check;
      while (parser.HandleNextDocument(check)) {
        if (check.stalled()) {
          if (error) *error = at(check.where()) + ": not YAML (the parser cannot get past this point)";
          return std::nullopt;
        }
      }
    }
    std::vector<YamlDocument> out;
    size_t values = 0;
    for (const auto& doc : YAML::LoadAll(text)) {
      if (!doc || doc.IsNull()) continue;
      YamlDocument d;
      d.value = convert(doc, values);
      if (d.value.is_null()) continue;  // "~" alone: as empty as an empty document
      if (doc.IsMap())
        for (const auto& kv : doc) d.key_lines.push_back({kv.first.as<std::string>(), kv.first.Mark().line + 1});
      out.push_back(std::move(d));
    }
    return out;
  } catch (const YAML::Exception& e) {
    if (error) *error = at(e.mark) + ": " + e.msg;
    return std::nullopt;
  } catch (const NotUtf8& e) {
    if (error) *error = at(e.mark) + ": not UTF-8 text";
    return std::nullopt;
  } catch (const TooLarge& e) {
    if (error) *error = at(e.mark) + ": expands to more than " + std::to_string(kMaxValues) + " values (through aliases)";
    return std::nullopt;
  } catch (const TooDeep& e) {
    if (error) *error = at(e.mark) + ": nested more than " + std::to_string(kMaxDepth) + " levels deep (or an alias refers to its own collection)";
    return std::nullopt;
  }
}

}  // namespace valley
