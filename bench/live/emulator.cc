#include "bench/live/emulator.h"

#include <algorithm>
#include <cmath>

namespace valley::live {

int64_t step_of(double work) { return static_cast<int64_t>(std::llround(work * 1000)); }

namespace {

// Progress of the running gang up to `t`, with its periodic checkpoints on the way.
void progress(JobProgress& p, const LiveJob& job, double t, const EmulatorSettings& s, std::vector<EmulatorAction>& out) {
  if (p.gang.empty() || p.done) return;
  const double rate = job.rate(p.gpus);
  const double from = std::max(p.advanced_to, p.progress_from);
  if (t > from) p.work_done = std::min(job.work_total, p.work_done + rate * (t - from));
  p.advanced_to = std::max(p.advanced_to, t);
  if (t < p.progress_from) return;
  const int records = static_cast<int>(std::floor((t - p.progress_from) / s.checkpoint_every));
  for (int k = p.records + 1; k <= records; ++k) {
    const double at = p.progress_from + k * s.checkpoint_every;
    p.checkpointed = std::min(job.work_total, p.gang_work + rate * (at - p.progress_from));
    out.push_back({EmulatorAction::Kind::Checkpoint, "", step_of(p.checkpointed), p.workers, at});
  }
  p.records = std::max(p.records, records);
}

// The running gang's GPU-seconds up to t, counted once: when it stops or its work is done.
void close_gang_time(JobProgress& p, double t) {
  if (!p.gang.empty() && !p.finishing) p.gang_gpu_seconds += p.gpus * std::max(0.0, t - p.gang_since);
}

}  // namespace

std::vector<EmulatorAction> advance(JobProgress& p, const LiveJob& job, const std::vector<PodView>& pods, double now,
                                    const std::map<std::string, double>& killed_at, const EmulatorSettings& s) {
  std::vector<EmulatorAction> out;
  if (p.done) return out;
  progress(p, job, now, s, out);

  // The launcher exited 0 after the work was done: the job is complete.
  for (const auto& pod : pods)
    if (pod.launcher && pod.succeeded && p.finishing) {
      p.done = true;
      return out;
    }

  // The gang the pods show now.
  const PodView* launcher = nullptr;
  int workers = 0, running_workers = 0, gpus = 0;
  for (const auto& pod : pods) {
    if (pod.launcher) {
      if (pod.running) launcher = &pod;
      continue;
    }
    if (pod.finished) continue;
    ++workers;
    if (pod.running) {
      ++running_workers;
      gpus += pod.gpus;
    }
  }
  std::set<std::string> now_pods;
  std::string gang;
  if (launcher && running_workers > 0 && running_workers == workers) {
    for (const auto& pod : pods)
      if (pod.running) now_pods.insert(pod.uid);
    for (const auto& uid : now_pods) gang += uid + ",";
  }

  if (!p.gang.empty() && gang != p.gang) {  // the gang stopped (or changed: a resize is a restart)
    close_gang_time(p, now);
    auto gone = [&](const std::string& node) {
      auto k = killed_at.find(node);
      return k != killed_at.end() && k->second >= p.gang_since;
    };
    const bool lost = std::any_of(p.gang_nodes.begin(), p.gang_nodes.end(), gone);
    if (lost) {
      ++p.losses;
      p.lost_work += p.work_done - std::max(p.checkpointed, p.gang_work);
      p.work_done = std::max(p.checkpointed, p.gang_work);
      // mpirun exits when a rank's host vanishes.
      for (const auto& pod : pods)
        if (pod.launcher && pod.running && !gone(pod.node) && !p.finishing)
          out.push_back({EmulatorAction::Kind::FailLauncher, pod.uid, 0, 0, now});
    } else {
      p.checkpointed = p.work_done;  // SIGTERM: the workload checkpoints before it exits
    }
    p.gang.clear();
    p.gang_pods.clear();
    p.gang_nodes.clear();
    p.gpus = 0;
    p.workers = 0;
    p.finishing = false;  // ended before its launcher could exit 0: the next gang ends at once
  }
  if (p.gang.empty() && !gang.empty() && !p.finishing) {
    p.gang = gang;
    p.gang_pods = now_pods;
    for (const auto& pod : pods)
      if (now_pods.count(pod.uid)) p.gang_nodes.insert(pod.node);
    p.launcher_uid = launcher->uid;
    p.gpus = gpus;
    p.workers = running_workers;
    p.gang_since = now;
    p.progress_from = now + (p.ran ? s.restart_seconds : 0);
    p.advanced_to = now;
    p.gang_work = p.work_done;
    p.records = 0;
    p.ran = true;
    if (p.starts++ == 0) p.first_start = now;
  }
  if (!p.finishing && p.work_done >= job.work_total - 1e-9 && !p.gang.empty()) {
    close_gang_time(p, now);
    p.finishing = true;
    out.push_back({EmulatorAction::Kind::EndLauncher, p.launcher_uid, 0, 0, now});
  }
  return out;
}

}  // namespace valley::live
