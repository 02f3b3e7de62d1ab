// The lifecycle's side of data in and outputs out (pure; the I/O is the controller's):
//  - A task with spec.data is admitted the first time only once its data can be listed: the
//    DataReady condition says so (True for the spec's generation), the planner passes the task
//    over until then, and a store or prefix that is missing is the task's reason (DataUnavailable)
//    before any GPU is held.
//  - Once a task with outputs has ended and none of its pods runs any more (their sidecars have
//    uploaded), Valley lists what was kept and writes its report there; status.outputs records it.
//  - A task deleted before that (mid-run, or ended with its outputs not yet recorded) can be held
//    by Valley's finalizer until they are: it ends as Failed (reason Deleted), its pods stop with
//    their grace period (their sidecars upload what they kept), and the report is written from its
//    last status. The finalizer is added once the task has run (an epoch) when `may_add` (the
//    operator's setting: a release may add it only once the release it could be rolled back to
//    knows how to remove it), never to a task being deleted (the API server refuses); it is
//    removed, whatever the setting, once the outputs are recorded, when the spec no longer keeps
//    outputs, or `give_up` after the deletion was asked (a store that stays unreachable must not
//    keep a deleted task forever).
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <string>

#include "controllers/api/spec.h"
#include "operator/kube/timefmt.h"

namespace valley::lifecycle {

inline constexpr const char* kDataReady = "DataReady";
inline constexpr const char* kDataUnavailable = "DataUnavailable";
inline constexpr const char* kReportJson = "valley-report.json";
inline constexpr const char* kReportHtml = "valley-report.html";
inline constexpr const char* kOutputsFinalizer = "valley.dev/outputs";
inline constexpr const char* kDeleted = "Deleted";  // the reason of a task deleted before it ended

// What the controller last learned of the task's data store: nullopt = not asked yet.
struct DataCheck {
  bool ready = false;
  std::string message;  // "data s3://b/p: 3 objects, 12000 bytes" or why it cannot be read
  int64_t files = 0, bytes = 0;  // the whole set, when ready
};

// status.data once the set has listed: where it is and how large (a node's data cache is sized by
// it); null before.
nlohmann::json data_status(const api::TaskSpec& spec, const DataCheck& check);

// Never admitted yet (no epoch) and its data not confirmed readable for this generation.
bool waits_for_data(const api::TaskSpec& spec, const nlohmann::json& status);

// The task ended, keeps outputs, and has not recorded them yet; `pods_done` = none of its pods runs.
bool outputs_due(const api::TaskSpec& spec, const nlohmann::json& status, bool pods_done);

// What to do with Valley's outputs finalizer on a task (its metadata and the status just decided).
struct FinalizerStep {
  enum Kind { Keep, Add, Remove } kind = Keep;
  bool gave_up = false;                          // removed with the outputs not recorded
  std::optional<std::chrono::seconds> recheck_in;  // held while deleting: when give_up comes
};
FinalizerStep outputs_finalizer(const nlohmann::json& metadata, const api::TaskSpec* spec, const nlohmann::json& status,
                                kube::SystemTime now, std::chrono::seconds give_up, bool may_add);

}  // namespace valley::lifecycle
