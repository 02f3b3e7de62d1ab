#include "operator/kube/watch_decoder.h"

namespace valley::kube {

WatchDecoder::WatchDecoder(std::function<bool(WatchEvent&&)> on_event, std::shared_ptr<const FieldMask> object_fields)
    : on_event_(std::move(on_event)) {
  if (object_fields)
    frame_fields_ = std::make_unique<const FieldMask>(FieldMask::only({{"type", FieldMask::all()}, {"object", *object_fields}}));
}

namespace {

// {"type": "<string>", "object": {...}}, as every watch frame is.
bool well_formed(const nlohmann::json& frame) {
  if (!frame.is_object()) return false;
  auto type = frame.find("type"), object = frame.find("object");
  return type != frame.end() && type->is_string() && object != frame.end() && object->is_object();
}

}  // namespace

bool WatchDecoder::decode_line(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
  if (line.empty()) return true;
  nlohmann::json frame = frame_fields_ ? frame_fields_->parse(line) : nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  // An ERROR frame carries a Status, which the object's mask was not made for: read it whole (rare).
  if (frame_fields_ && well_formed(frame) && frame["type"] == "ERROR")
    frame = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!well_formed(frame)) {
    ++malformed_;
    return true;
  }
  ++events_;
  WatchEvent ev{frame["type"].get<std::string>(), std::move(frame["object"])};
  if (!on_event_(std::move(ev))) {
    stopped_ = true;
    return false;
  }
  return true;
}

bool WatchDecoder::feed(std::string_view chunk) {
  if (stopped_) return false;
  while (!chunk.empty()) {
    size_t nl = chunk.find('\n');
    if (nl == std::string_view::npos) {
      if (!discarding_) pending_.append(chunk);
      if (pending_.size() > kMaxLine) {
        pending_.clear();
        discarding_ = true;
        ++malformed_;
      }
      return true;
    }
    if (discarding_) {
      discarding_ = false;
    } else if (pending_.empty()) {
      if (!decode_line(chunk.substr(0, nl))) return false;
    } else {
      // Decoded in place and cleared, so the buffer keeps its capacity for the next long line.
      pending_.append(chunk.substr(0, nl));
      const bool go_on = decode_line(pending_);
      pending_.clear();
      if (pending_.capacity() > (1u << 20)) std::string().swap(pending_);
      if (!go_on) return false;
    }
    chunk.remove_prefix(nl + 1);
  }
  return true;
}

bool WatchDecoder::finish() {
  if (stopped_) return false;
  if (discarding_ || pending_.empty()) return true;
  std::string line;
  line.swap(pending_);
  return decode_line(line);
}

}  // namespace valley::kube
