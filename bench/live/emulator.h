// The workload emulator's core, pure and the same for every scheduler: what a training job does
// given what the API shows of its pods. It never reads a scheduler's objects, only pods and which
// nodes the benchmark itself took away.
//
// A job progresses while its gang runs: its launcher Running and every worker pod it has Running
// (at least one), at the Pollux rate of the workers' GPUs. A gang that starts again after having
// run restores a checkpoint first (`restart_seconds` with its GPUs held). The job checkpoints every
// `checkpoint_every` seconds of progress (the record Valley reads) and on SIGTERM: a gang whose
// pods are deleted or end on live nodes keeps all its work; one that loses a pod with its node
// falls back to its last periodic checkpoint, and its launcher (mpirun, whose rank's host vanished)
// fails. When its work is done the launcher exits 0. Times are trace seconds.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bench/live/live_jobs.h"

namespace valley::live {

struct PodView {
  std::string uid, node;
  bool launcher = false;
  int gpus = 0;
  bool running = false;   // phase Running, not being deleted
  bool finished = false;  // Succeeded or Failed
  bool succeeded = false;
};

struct EmulatorSettings {
  double checkpoint_every = 1800;
  double restart_seconds = 60;
};

struct JobProgress {
  double work_done = 0;
  double checkpointed = 0;  // the work its last checkpoint holds
  // The gang running now ("" when none): its pods' uids; its GPUs; from when it progresses.
  std::string gang;
  std::set<std::string> gang_pods, gang_nodes;
  std::string launcher_uid;
  int gpus = 0, workers = 0;
  double gang_since = 0, progress_from = 0, advanced_to = 0, gang_work = 0;
  int records = 0;   // periodic checkpoints of this gang
  bool ran = false;  // has run before: its next start restores a checkpoint
  bool finishing = false, done = false;
  int starts = 0, losses = 0;
  double lost_work = 0;
  // When a whole gang first ran (-1: never), and the GPU-seconds of whole gangs at work (restoring
  // a checkpoint included, the finishing launcher's exit not): what the simulator charges. The pods'
  // other time (starting, waiting for peers or a new launcher, stopping) is the systems' latency.
  double first_start = -1, gang_gpu_seconds = 0;
};

struct EmulatorAction {
  enum class Kind { Checkpoint, EndLauncher, FailLauncher };
  Kind kind = Kind::Checkpoint;
  std::string pod;         // the launcher (End/Fail)
  int64_t step = 0;        // Checkpoint: the record's step (work in 1-GPU milliseconds... see step_of)
  int world_size = 0;      // Checkpoint: workers of the gang
  double at = 0;           // Checkpoint: when it was taken (trace seconds)
};

// The record's step for an amount of work: 1-GPU seconds x 1000, so rates have resolution.
int64_t step_of(double work);

// Brings `p` to `now` given the job's pods and when each node the benchmark took away went (a
// node may come back under its name); returns what the workload does (checkpoint records to write,
// a launcher to end or fail).
std::vector<EmulatorAction> advance(JobProgress& p, const LiveJob& job, const std::vector<PodView>& pods, double now,
                                    const std::map<std::string, double>& killed_at, const EmulatorSettings& s);

}  // namespace valley::live
