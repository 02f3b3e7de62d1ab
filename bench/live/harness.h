// One live run (I/O at the edge): submits the slice's jobs to one system at their arrival times
// under time compression, runs the workload emulator over the pods it sees (checkpoint records in
// the store for Valley, a launcher's end or failure through kwok's annotations), replays the spot
// interruptions on the benchmark's own kwok fleet, and meters what every pod cost. The scheduler
// under test (Valley's operator, or Kueue with the MPI Operator) runs beside it, started by
// bench/live/run.sh.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "bench/live/emulator.h"
#include "bench/live/meter.h"
#include "bench/live/objects.h"
#include "operator/kube/client.h"

namespace valley::live {

enum class System { Valley, Kueue };

struct RunSettings {
  System system = System::Valley;
  SubmitContext submit;
  double horizon = 0;  // trace seconds after which the run stops (unfinished jobs are counted)
  std::string out;     // directory: <system>.json, <system>-jobs.jsonl
  double tick_seconds = 0.1;  // wall clock between looks
};

// Runs to the end (every job complete, or the horizon); returns the figures written.
nlohmann::json run(kube::Client& client, const sim::Inputs& in, const RunSettings& settings);

}  // namespace valley::live
