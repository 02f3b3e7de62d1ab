// libFuzzer target for the watch-stream decoder: arbitrary bytes, split into chunks at arbitrary
// places, must never crash, hang or leak, and must decode to the same events however they are split;
// likewise through the pod informer's field mask (the skimmer reads dropped values without parsing
// them).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "controllers/task/cache_fields.h"
#include "operator/kube/watch_decoder.h"

namespace {

std::vector<std::string> decode(std::string_view data, size_t chunk, bool masked) {
  std::vector<std::string> out;
  valley::kube::WatchDecoder decoder([&](valley::kube::WatchEvent&& ev) {
    out.push_back(ev.type + ":" + ev.object.dump());
    return true;
  }, masked ? valley::task::pod_fields() : nullptr);
  for (size_t pos = 0; pos < data.size(); pos += chunk) decoder.feed(data.substr(pos, chunk));
  decoder.finish();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size == 0) return 0;
  size_t chunk = 1 + bytes[0] % 64;  // the first byte chooses how the rest is chopped
  std::string_view data(reinterpret_cast<const char*>(bytes) + 1, size - 1);
  for (bool masked : {false, true}) {
    auto whole = decode(data, data.size() + 1, masked);
    auto chopped = decode(data, chunk, masked);
    if (whole != chopped) __builtin_trap();
  }
  return 0;
}
