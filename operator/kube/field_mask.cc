#include "operator/kube/field_mask.h"

namespace valley::kube {
namespace {

using json = nlohmann::json;

const FieldMask& keep_all() {
  static const FieldMask kAll = FieldMask::all();
  return kAll;
}

// Copies JSON text without the members a mask drops, reading only as much as it takes to find
// where each value ends; json::parse then builds (and fully checks) what is left. nlohmann's lexer
// reads a character at a time and was most of a pod event's cost, and two thirds of a pod are
// dropped. A dropped value is checked only for closed strings and matching brackets.
class Skimmer {
 public:
  Skimmer(std::string_view text, std::string& out) : s_(text), out_(out) {}

  bool run(const FieldMask& mask) {
    ws();
    if (!value(&mask)) return false;
    ws();
    return i_ == s_.size();
  }

 private:
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
  }
  // A string starting at i_ (a quote): moves past its closing quote. `escaped` tells whether it
  // holds a backslash.
  bool string(bool& escaped) {
    escaped = false;
    ++i_;
    for (;;) {
      const size_t j = s_.find_first_of("\"\\", i_);
      if (j == std::string_view::npos) return false;
      if (s_[j] == '"') {
        i_ = j + 1;
        return true;
      }
      escaped = true;
      i_ = j + 2;  // the backslash and the character it escapes
      if (i_ > s_.size()) return false;
    }
  }
  // Moves past one value of any kind without looking inside beyond its structure.
  bool skip() {
    if (i_ >= s_.size() || std::string_view("\"{[-0123456789tfn").find(s_[i_]) == std::string_view::npos) return false;
    std::string closers;
    do {
      if (i_ >= s_.size()) return false;
      const char c = s_[i_];
      if (c == '"') {
        bool escaped = false;
        if (!string(escaped)) return false;
      } else if (c == '{' || c == '[') {
        closers.push_back(c == '{' ? '}' : ']');
        ++i_;
      } else if (c == '}' || c == ']') {
        if (closers.empty() || closers.back() != c) return false;
        closers.pop_back();
        ++i_;
      } else {
        ++i_;  // commas, colons, white space, numbers, literals
      }
      // A scalar at the top ends at the next delimiter.
      if (closers.empty() && c != '"' && c != '}' && c != ']')
        while (i_ < s_.size() && std::string_view(",}] \t\r\n").find(s_[i_]) == std::string_view::npos) ++i_;
    } while (!closers.empty());
    return true;
  }
  bool value(const FieldMask* mask) {
    if (i_ >= s_.size()) return false;
    const char c = s_[i_];
    // Deeper than any Kubernetes object nests, a value is kept whole rather than followed down
    // recursively (the stack stays bounded; skip() keeps its own).
    if (mask->whole() || (c != '{' && c != '[') || depth_ >= kMaxDepth) {
      const size_t from = i_;
      if (!skip()) return false;
      out_.append(s_.substr(from, i_ - from));
      return true;
    }
    ++depth_;
    const bool ok = c == '{' ? object(*mask) : array(*mask);
    --depth_;
    return ok;
  }
  bool array(const FieldMask& mask) {
    out_.push_back('[');
    ++i_;
    ws();
    if (i_ < s_.size() && s_[i_] == ']') {
      out_.push_back(']');
      ++i_;
      return true;
    }
    for (;;) {
      ws();
      if (!value(&mask)) return false;
      ws();
      if (i_ >= s_.size()) return false;
      const char c = s_[i_++];
      out_.push_back(c);
      if (c == ']') return true;
      if (c != ',') return false;
    }
  }
  bool object(const FieldMask& mask) {
    out_.push_back('{');
    ++i_;
    bool first = true;
    for (;;) {
      ws();
      if (i_ >= s_.size()) return false;
      if (s_[i_] == '}' && first) break;
      if (s_[i_] != '"') return false;
      const size_t key_from = i_;
      bool escaped = false;
      if (!string(escaped)) return false;
      const std::string_view raw_key = s_.substr(key_from, i_ - key_from);
      std::string decoded;
      if (escaped) {  // rare in Kubernetes objects: let nlohmann read the escapes
        json k = json::parse(raw_key, nullptr, false);
        if (!k.is_string()) return false;
        decoded = k.get<std::string>();
      }
      ws();
      if (i_ >= s_.size() || s_[i_] != ':') return false;
      ++i_;
      ws();
      const FieldMask* m = mask.member(escaped ? std::string_view(decoded) : raw_key.substr(1, raw_key.size() - 2));
      if (m != nullptr) {
        if (out_.back() != '{') out_.push_back(',');
        out_.append(raw_key);
        out_.push_back(':');
        if (!value(m)) return false;
      } else if (!skip()) {
        return false;
      }
      first = false;
      ws();
      if (i_ >= s_.size()) return false;
      if (s_[i_] == '}') break;
      if (s_[i_] != ',') return false;
      ++i_;
    }
    out_.push_back('}');
    ++i_;
    return true;
  }

  static constexpr int kMaxDepth = 256;
  std::string_view s_;
  std::string& out_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

FieldMask FieldMask::all() { return FieldMask(); }

FieldMask FieldMask::only(std::vector<std::pair<std::string, FieldMask>> members) {
  FieldMask m;
  m.kind_ = Kind::Only;
  for (auto& [name, mask] : members) m.members_.insert_or_assign(std::move(name), std::move(mask));
  return m;
}

FieldMask FieldMask::all_except(std::vector<std::string> names) {
  FieldMask m;
  m.kind_ = Kind::AllExcept;
  for (auto& name : names) m.members_.insert_or_assign(std::move(name), FieldMask());
  return m;
}

const FieldMask* FieldMask::member(std::string_view name) const {
  switch (kind_) {
    case Kind::All: return this;
    case Kind::Only: {
      auto it = members_.find(name);
      return it == members_.end() ? nullptr : &it->second;
    }
    case Kind::AllExcept: return members_.find(name) == members_.end() ? &keep_all() : nullptr;
  }
  return nullptr;
}

void FieldMask::apply(json& value) const {
  if (kind_ == Kind::All) return;
  if (value.is_array()) {
    for (auto& element : value) apply(element);
    return;
  }
  if (!value.is_object()) return;
  for (auto it = value.begin(); it != value.end();) {
    if (const FieldMask* m = member(it.key())) {
      m->apply(*it);
      ++it;
    } else {
      it = value.erase(it);
    }
  }
}

json FieldMask::parse(std::string_view text) const {
  // One buffer per thread, kept between calls: a fresh one per event was a large allocation, and
  // glibc consolidates its free lists on each (a tenth of the pod informer's time).
  thread_local std::string kept;
  kept.clear();
  if (!Skimmer(text, kept).run(*this)) return json(json::value_t::discarded);
  json parsed = json::parse(kept, nullptr, /*allow_exceptions=*/false);
  if (kept.capacity() > (1u << 20)) std::string().swap(kept);  // an exceptional object: not kept
  return parsed;
}

}  // namespace valley::kube
