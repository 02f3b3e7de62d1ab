// valley-train: a small, real data-parallel training job for Valley's checkpoint-restart contract.
// Linear regression trained by synchronous SGD with MPI_Allreduce over generated data. Each step
// takes the same global mini-batch whatever the world size (sample j of the step goes to rank
// j mod size), so a run stopped at 4 ranks and resumed at 3 follows the same trajectory up to
// floating-point summation order.
//
// The contract with Valley (docs: README "Workload checkpoint contract"):
//  - VALLEY_CHECKPOINT_URI: s3://bucket/prefix (credentials and endpoint from AWS_* variables),
//    file:///dir, or pvc://claim/path (then VALLEY_CHECKPOINT_DIR is the mounted directory).
//  - Checkpoints every --checkpoint-every steps and when any rank gets SIGTERM/SIGINT: rank 0 writes
//    ckpt-<step>.bin, then latest.json naming it (operator/storage/checkpoint_record.h).
//  - Always resumes from latest.json when one exists (VALLEY_RESUME=1 only says one should).
//  - Exit 0 when training is complete; 143 after a checkpoint on SIGTERM (retryable for Valley).
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "operator/kube/timefmt.h"
#include "operator/storage/checkpoint_record.h"
#include "operator/storage/object_store.h"

namespace {

using valley::storage::CheckpointRecord;
using valley::storage::ObjectStore;

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

struct Options {
  int64_t steps = 400;
  int64_t checkpoint_every = 50;
  int features = 16;
  int64_t samples = 4096;
  int batch = 64;
  double learning_rate = 0.05;
  uint64_t seed = 7;
  int step_delay_ms = 0;  // slows a step down so a test can interrupt mid-run
  std::string output;     // final weights as text, written by rank 0
};

// SplitMix64: a counter-based generator, so sample i is the same on every rank and world size.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
double uniform(uint64_t key) { return static_cast<double>(mix(key) >> 11) * 0x1.0p-53 * 2.0 - 1.0; }  // [-1, 1)

struct Sample {
  std::vector<double> x;
  double y = 0;
};

Sample sample(const Options& o, int64_t i) {
  Sample s;
  s.x.resize(o.features);
  double y = 0;
  for (int f = 0; f < o.features; ++f) {
    s.x[f] = uniform(o.seed * 1000003ULL + static_cast<uint64_t>(i) * 131ULL + static_cast<uint64_t>(f));
    double w_true = uniform(o.seed * 7919ULL + static_cast<uint64_t>(f) + 0xABCDEFULL);
    y += w_true * s.x[f];
  }
  s.y = y + 0.01 * uniform(o.seed ^ (static_cast<uint64_t>(i) << 20) ^ 0x5555ULL);
  return s;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::unique_ptr<ObjectStore> open_store(std::string* error) {
  std::string dir = env("VALLEY_CHECKPOINT_DIR");
  if (!dir.empty()) return valley::storage::make_dir_store(dir);
  std::string uri = env("VALLEY_CHECKPOINT_URI");
  return uri.empty() ? nullptr : valley::storage::open_store_from_environment(uri, error);
}

std::string encode(int64_t step, const std::vector<double>& w) {
  std::string out(sizeof(int64_t) + w.size() * sizeof(double), '\0');
  std::memcpy(out.data(), &step, sizeof step);
  std::memcpy(out.data() + sizeof step, w.data(), w.size() * sizeof(double));
  return out;
}

bool decode(const std::string& data, int64_t* step, std::vector<double>* w) {
  if (data.size() != sizeof(int64_t) + w->size() * sizeof(double)) return false;
  std::memcpy(step, data.data(), sizeof *step);
  std::memcpy(w->data(), data.data() + sizeof *step, w->size() * sizeof(double));
  return true;
}

void checkpoint(ObjectStore& store, int64_t step, const std::vector<double>& w, int world) {
  char name[64];
  std::snprintf(name, sizeof name, "ckpt-%08lld.bin", static_cast<long long>(step));
  store.put(name, encode(step, w));
  CheckpointRecord r{step, valley::kube::format_time(std::chrono::system_clock::now()), std::atoi(env("VALLEY_EPOCH").c_str()),
                     world, name};
  const std::string record = valley::storage::to_json(r);
  store.put(valley::storage::kLatestKey, record);
  // Inside a pod: Valley reads this when the pod ends (how pvc:// checkpoints reach its status).
  if (::access("/dev/termination-log", W_OK) == 0) {
    if (FILE* f = std::fopen("/dev/termination-log", "w")) {
      std::fputs(record.c_str(), f);
      std::fclose(f);
    }
  }
}

double loss(const Options& o, const std::vector<double>& w) {
  double total = 0;
  for (int64_t i = 0; i < 512; ++i) {
    Sample s = sample(o, i);
    double p = 0;
    for (int f = 0; f < o.features; ++f) p += w[f] * s.x[f];
    total += (p - s.y) * (p - s.y);
  }
  return total / 512;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--steps") o.steps = std::stoll(v);
    else if (k == "--checkpoint-every") o.checkpoint_every = std::stoll(v);
    else if (k == "--features") o.features = std::stoi(v);
    else if (k == "--samples") o.samples = std::stoll(v);
    else if (k == "--batch") o.batch = std::stoi(v);
    else if (k == "--lr") o.learning_rate = std::stod(v);
    else if (k == "--seed") o.seed = std::stoull(v);
    else if (k == "--step-delay-ms") o.step_delay_ms = std::stoi(v);
    else if (k == "--output") o.output = v;
    else throw std::invalid_argument("unknown flag " + k);
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);

  Options o;
  try {
    o = parse(argc, argv);
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "valley-train: %s\n", e.what());
    MPI_Finalize();
    return 2;
  }
  // A data set Valley copied in (VALLEY_DATA_DIR): the bytes every rank finds there, the least of them.
  if (const std::string data = env("VALLEY_DATA_DIR"); !data.empty()) {
    long long bytes = 0;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(data, ec); !ec && it != std::filesystem::recursive_directory_iterator();
         it.increment(ec))
      if (it->is_regular_file() && it->path().filename().string().rfind(".valley-", 0) != 0) bytes += static_cast<long long>(it->file_size());
    long long least = 0;
    MPI_Allreduce(&bytes, &least, 1, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    if (rank == 0) std::printf("data: %lld bytes in %s on every rank\n", least, data.c_str());
  }
  std::string error;
  auto store = rank == 0 ? open_store(&error) : nullptr;
  int store_ok = rank != 0 || store || (error.empty());
  MPI_Bcast(&store_ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!store_ok) {
    if (rank == 0) std::fprintf(stderr, "valley-train: checkpoint store: %s\n", error.c_str());
    MPI_Finalize();
    return 2;
  }

  std::vector<double> w(o.features, 0.0);
  int64_t step = 0;
  if (rank == 0 && store) {
    try {
      if (auto latest = store->get(valley::storage::kLatestKey)) {
        auto record = valley::storage::parse_checkpoint_record(*latest, &error);
        auto data = record ? store->get(record->object) : std::nullopt;
        if (!record || !data || !decode(*data, &step, &w)) {
          std::fprintf(stderr, "valley-train: unusable checkpoint (%s); starting over\n", error.c_str());
          step = 0;
          std::fill(w.begin(), w.end(), 0.0);
        } else {
          std::printf("resumed from step %lld (saved at world size %d) at world size %d\n", static_cast<long long>(step),
                      record->world_size, world);
        }
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "valley-train: reading checkpoint: %s\n", e.what());
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }
  MPI_Bcast(&step, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  MPI_Bcast(w.data(), o.features, MPI_DOUBLE, 0, MPI_COMM_WORLD);

  std::vector<double> buf(o.features + 1);
  bool stopped = false;
  while (step < o.steps) {
    std::fill(buf.begin(), buf.end(), 0.0);
    for (int j = rank; j < o.batch; j += world) {
      Sample s = sample(o, (step * o.batch + j) % o.samples);
      double p = 0;
      for (int f = 0; f < o.features; ++f) p += w[f] * s.x[f];
      for (int f = 0; f < o.features; ++f) buf[f] += 2.0 * (p - s.y) * s.x[f];
    }
    buf[o.features] = g_stop ? 1.0 : 0.0;  // any rank's signal stops everyone at the same step
    MPI_Allreduce(MPI_IN_PLACE, buf.data(), o.features + 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (int f = 0; f < o.features; ++f) w[f] -= o.learning_rate * buf[f] / o.batch;
    ++step;
    stopped = buf[o.features] > 0;
    if (rank == 0 && store && (stopped || step % o.checkpoint_every == 0 || step == o.steps)) {
      try {
        checkpoint(*store, step, w, world);
        if (stopped) std::printf("checkpointed at step %lld on SIGTERM\n", static_cast<long long>(step));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "valley-train: checkpoint at step %lld failed: %s\n", static_cast<long long>(step), e.what());
      }
    }
    if (stopped) break;
    if (o.step_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o.step_delay_ms));
  }
  if (rank == 0) {
    std::printf("%s step=%lld loss=%.12g world=%d\n", stopped ? "stopped" : "done", static_cast<long long>(step), loss(o, w), world);
    if (!stopped && !o.output.empty()) {
      if (FILE* f = std::fopen(o.output.c_str(), "w")) {
        for (double v : w) std::fprintf(f, "%.17g\n", v);
        std::fclose(f);
      }
    }
    std::fflush(stdout);
  }
  MPI_Finalize();
  return stopped ? 143 : 0;
}
