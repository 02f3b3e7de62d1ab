// How fast the client decodes a watch stream: realistic pod MODIFIED events, fed in 16 KiB chunks
// as the network delivers them, through WatchDecoder (JSON parse included). Prints events/s, MB/s
// for four ways: whole objects, whole then lean_pod (the pod informer until 2026-11-25), parsed
// through the pod mask, and through the mask then made a typed api::Pod (the pod informer now).
#include <chrono>
#include <cstdio>
#include <string>

#include "bench/kube/sample_pod.h"
#include "controllers/api/pod.h"
#include "controllers/task/cache_fields.h"
#include "operator/kube/watch_decoder.h"

int main(int argc, char** argv) {
  int events = argc > 1 ? std::atoi(argv[1]) : 50000;
  std::string stream;
  for (int i = 0; i < 1000; ++i) {
    nlohmann::json frame = {{"type", "MODIFIED"}, {"object", valley::bench::sample_pod_from_server("team-a", "resnet50-worker-" + std::to_string(i), 1000 + i)}};
    stream += frame.dump() + "\n";
  }
  const double avg_bytes = static_cast<double>(stream.size()) / 1000.0;
  size_t decoded = 0;
  size_t typed = 0;
  auto run = [&](const char* way, bool lean_after, std::shared_ptr<const valley::kube::FieldMask> mask, bool typed_after = false) {
    auto start = std::chrono::steady_clock::now();
    int rounds = (events + 999) / 1000;
    for (int r = 0; r < rounds; ++r) {
      valley::kube::WatchDecoder decoder([&](valley::kube::WatchEvent&& ev) {
        if (lean_after) valley::task::lean_pod(ev.object);
        if (typed_after) typed += valley::api::pod_from(ev.object).labels.size();
        decoded += ev.object.size();
        return true;
      }, mask);
      for (size_t pos = 0; pos < stream.size(); pos += 16384) decoder.feed(std::string_view(stream).substr(pos, 16384));
      decoder.finish();
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double n = rounds * 1000.0;
    std::printf("{\"benchmark\":\"watch_decode\",\"way\":\"%s\",\"events\":%.0f,\"bytes_per_event\":%.0f,\"seconds\":%.3f,"
                "\"events_per_second\":%.0f,\"megabytes_per_second\":%.1f}\n",
                way, n, avg_bytes, seconds, n / seconds, n * avg_bytes / seconds / 1e6);
  };
  run("whole", false, nullptr);
  run("whole, then lean_pod", true, nullptr);
  run("pod mask", false, valley::task::pod_fields());
  run("pod mask, then typed", false, valley::task::pod_fields(), true);
  return decoded > 0 && typed > 0 ? 0 : 1;
}
