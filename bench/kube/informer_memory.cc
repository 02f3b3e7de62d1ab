// Cache memory per object: creates N pods (default 10,000) in a scratch namespace of the local
// cluster, syncs an informer over them, and reports heap bytes held by the cache per pod
// (mallinfo2, before vs after) next to the pod's JSON size: as the generic informer caches pods
// (managedFields dropped), as lean JSON (lean_pod: the fields Valley reads) and as Valley's
// controller caches them (api::Pod, typed, parsed through the pod mask). Deletes the namespace afterwards.
//   bench_informer_memory [kubeconfig] [pods]
#include <malloc.h>

#include <atomic>
#include <algorithm>
#include <chrono>
#include <functional>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/kube/sample_pod.h"
#include "operator/kube/client.h"
#include "operator/kube/error.h"
#include "controllers/api/pod.h"
#include "controllers/task/cache_fields.h"
#include "operator/kube/informer.h"

using namespace valley;

static size_t heap_in_use() {
  malloc_trim(0);
  return mallinfo2().uordblks;
}

int main(int argc, char** argv) {
  std::string kubeconfig = argc > 1 ? argv[1] : ".valley/kubeconfig";
  int pods = argc > 2 ? std::atoi(argv[2]) : 10000;
  kube::HttpOptions http;
  http.qps = 0;
  kube::Client client(kube::load_kubeconfig(kubeconfig), http);
  std::string ns = "bench-informer-" + std::to_string(::getpid());
  client.create(kube::resources::kNamespaces, "", {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
  // The API server refuses pods of a namespace until the controller-manager has made its default
  // ServiceAccount (a moment, or longer just after the control plane restarted).
  for (int i = 0; i < 600; ++i) {
    try {
      client.get(kube::resources::kServiceAccounts, ns, "default");
      break;
    } catch (const kube::KubeError& e) {
      if (e.http_status() != 404) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> creators;
  std::atomic<int> failed{0};
  std::vector<char> created(static_cast<size_t>(pods), 0);  // by index; each written by one thread
  std::mutex error_mu;
  std::string first_error;
  for (int t = 0; t < 16; ++t)
    creators.emplace_back([&, t] {
      for (int i = t; i < pods; i += 16) {
        try {
          client.create(kube::resources::kPods, ns, bench::sample_pod_spec("pod-" + std::to_string(i)));
          created[static_cast<size_t>(i)] = 1;
        } catch (const kube::KubeError& e) {
          std::lock_guard l(error_mu);
          if (failed++ == 0) first_error = e.what();
        }
      }
    });
  for (auto& c : creators) c.join();
  double create_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto first_created = std::find(created.begin(), created.end(), 1) - created.begin();
  if (first_created == pods) {
    std::fprintf(stderr, "bench_informer_memory: no pod could be created (%d refused; the first: %s)\n", failed.load(), first_error.c_str());
    client.remove(kube::resources::kNamespaces, "", ns);
    return 1;
  }

  // One pod as the server returns it: its JSON size, with and without managedFields.
  nlohmann::json one = client.get(kube::resources::kPods, ns, "pod-" + std::to_string(first_created));
  size_t json_bytes = one.dump().size();
  one["metadata"].erase("managedFields");
  size_t json_bytes_stripped = one.dump().size();
  one = nullptr;

  // The cache as the generic informer keeps it (managedFields dropped), then as Valley's controller
  // keeps its pods (only the fields it reads: controllers/task/cache_fields.h).
  struct Measured {
    size_t cached = 0;
    double sync_s = 0, per_pod = 0, total_mb = 0;
  };
  auto measure = [&]<class T>(std::function<void(nlohmann::json&)> transform, std::shared_ptr<const kube::FieldMask> fields, T*) {
    Measured m;
    size_t before = heap_in_use();
    kube::InformerOptions io;
    io.ns = ns;
    if (transform) io.transform = std::move(transform);
    io.fields = std::move(fields);
    kube::BasicInformer<T> informer(client, kube::resources::kPods, io);
    auto s0 = std::chrono::steady_clock::now();
    informer.start();
    if (!informer.wait_for_sync(std::chrono::minutes(5))) return m;
    m.sync_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
    m.cached = informer.store().size();
    size_t after = heap_in_use();
    m.per_pod = static_cast<double>(after - before) / static_cast<double>(std::max<size_t>(1, m.cached));
    m.total_mb = static_cast<double>(after - before) / 1e6;
    informer.stop();
    return m;
  };
  const Measured plain = measure(nullptr, nullptr, static_cast<nlohmann::json*>(nullptr));
  const Measured lean = measure(task::lean_pod, nullptr, static_cast<nlohmann::json*>(nullptr));
  const Measured typed = measure(nullptr, task::pod_fields(), static_cast<api::Pod*>(nullptr));
  std::printf("{\"benchmark\":\"informer_memory\",\"pods\":%zu,\"create_seconds\":%.1f,\"create_failures\":%d,"
              "\"list_and_sync_seconds\":%.2f,\"heap_bytes_per_cached_pod\":%.0f,\"pod_json_bytes\":%zu,"
              "\"pod_json_bytes_without_managed_fields\":%zu,\"cache_total_megabytes\":%.1f,"
              "\"lean_list_and_sync_seconds\":%.2f,\"lean_heap_bytes_per_cached_pod\":%.0f,\"lean_cache_total_megabytes\":%.1f,"
              "\"typed_list_and_sync_seconds\":%.2f,\"typed_heap_bytes_per_cached_pod\":%.0f,\"typed_cache_total_megabytes\":%.1f}\n",
              plain.cached, create_s, failed.load(), plain.sync_s, plain.per_pod, json_bytes, json_bytes_stripped, plain.total_mb,
              lean.sync_s, lean.per_pod, lean.total_mb, typed.sync_s, typed.per_pod, typed.total_mb);
  const size_t cached = std::min({plain.cached, lean.cached, typed.cached});
  client.remove(kube::resources::kNamespaces, "", ns);
  return cached == static_cast<size_t>(pods) ? 0 : 1;
}
