// Decodes a watch response body (one JSON object per line: {"type": ..., "object": ...}) fed in
// arbitrary chunks, as they arrive from the network. Pure. A line that is not a watch frame is
// counted and skipped, never fatal; an ERROR frame carries a Status (410 Expired = relist).
#pragma once

#include <nlohmann/json.hpp>

#include "operator/kube/field_mask.h"

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace valley::kube {

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
  nlohmann::json object;
};

class WatchDecoder {
 public:
  // on_event returns false to stop decoding (then feed() returns false too). With `object_fields`,
  // each event's object is built only as far as the mask keeps it (an ERROR frame's Status whole).
  explicit WatchDecoder(std::function<bool(WatchEvent&&)> on_event, std::shared_ptr<const FieldMask> object_fields = nullptr);

  // Consumes a chunk; returns false once on_event asked to stop.
  bool feed(std::string_view chunk);
  // The stream ended: a trailing line without newline is decoded too. Returns false if stopped.
  bool finish();

  size_t events() const { return events_; }
  size_t malformed() const { return malformed_; }
  // A line longer than this is dropped as malformed (protects memory from a broken stream).
  static constexpr size_t kMaxLine = 64u << 20;

 private:
  bool decode_line(std::string_view line);

  std::function<bool(WatchEvent&&)> on_event_;
  std::unique_ptr<const FieldMask> frame_fields_;  // {type, object: object_fields}; null: whole frames
  std::string pending_;
  bool stopped_ = false;
  bool discarding_ = false;  // inside an over-long line
  size_t events_ = 0;
  size_t malformed_ = 0;
};

}  // namespace valley::kube
