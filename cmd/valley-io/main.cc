// valley-io: moves a task's files between its pods and the object store, inside the pods Valley
// renders (the operator image carries it):
//   valley-io fetch --uri s3://bucket/prefix --dir /valley/data
//       an init container: the data set into the directory before the workload starts; resumes a
//       copy cut off earlier and skips what the directory already holds (operator/storage/transfer.h).
//   valley-io keep --uri s3://bucket/prefix --dir /valley/output [--every 30] [--now]
//       a sidecar: uploads what changed in the directory every --every seconds (so a pod killed
//       past its grace period loses at most that much) and once more on SIGTERM (the kubelet sends
//       it once the workload's containers have ended, or when the pod is deleted); --now: once.
// Credentials and endpoint from the AWS_* variables (the task's Secret). Exit 0 on success, 1 with a
// message (also in the termination message the task's status reads) on failure: at once when the
// store refuses the request itself (no such bucket, access denied), after --attempts otherwise.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include "operator/signals.h"
#include "operator/storage/object_store.h"
#include "operator/storage/transfer.h"

namespace {

using valley::storage::StoreError;

int usage() {
  std::cerr << "usage: valley-io fetch|keep --uri URI --dir DIR [--attempts N] [--now]\n";
  return 2;
}

void say(const std::string& line) { std::cout << "valley-io: " << line << std::endl; }

int fail(const std::string& why) {
  std::cerr << "valley-io: " << why << std::endl;
  std::ofstream("/dev/termination-log") << why;
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string mode = argv[1];
  std::string uri, dir;
  int attempts = 5, every = 30;
  bool now = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--uri") {
      uri = value();
    } else if (a == "--dir") {
      dir = value();
    } else if (a == "--attempts") {
      attempts = std::max(1, std::atoi(value().c_str()));
    } else if (a == "--every") {
      every = std::max(1, std::atoi(value().c_str()));
    } else if (a == "--now") {
      now = true;
    } else {
      return usage();
    }
  }
  if ((mode != "fetch" && mode != "keep") || uri.empty() || dir.empty()) return usage();
  std::string error;
  auto store = valley::storage::open_store_from_environment(uri, &error);
  if (!store) return fail(uri + ": " + error);
  if (mode == "keep" && !now) {
    valley::ShutdownSignal shutdown;  // blocks SIGTERM before any other thread starts
    say("keeping " + dir + " in " + uri + " every " + std::to_string(every) + "s and when the pod stops");
    while (!shutdown.wait_for(std::chrono::seconds(every))) {
      try {
        valley::storage::keep_from(dir, *store, say);
      } catch (const std::exception& e) {
        say(std::string(e.what()) + "; trying again in " + std::to_string(every) + "s");
      }
    }
  }
  // A store that fails now may answer in a moment: each attempt continues where the last stopped.
  for (int attempt = 1;; ++attempt) {
    try {
      if (mode == "fetch") {
        auto s = valley::storage::fetch_into(*store, dir, say);
        if (s.files == 0) return fail(store->describe() + " holds no objects: nothing to fetch");
        say("fetched " + store->describe() + " into " + dir + ": " + valley::storage::describe(s));
      } else {
        auto s = valley::storage::keep_from(dir, *store, say);
        say("kept " + dir + " in " + store->describe() + ": " + valley::storage::describe(s));
      }
      return 0;
    } catch (const std::exception& e) {
      const auto* refused = dynamic_cast<const StoreError*>(&e);
      if (attempt >= attempts || (refused && refused->permanent())) return fail(e.what());
      say(std::string(e.what()) + "; trying again");
      std::this_thread::sleep_for(std::chrono::seconds(1 << std::min(attempt, 4)));
    }
  }
}
