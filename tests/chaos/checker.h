// The chaos campaign's independent checker. It knows Valley only through what the API server shows
// (lists of TrainingTasks, pods, nodes and the objects Valley owns, and each task's successive
// versions from a watch), never the operator's memory, and it shares no decision code with it:
// prices are its own, from the run's price book. It holds Valley to its promises:
//   duplicate-pod      never two live (not Succeeded/Failed) pods for one task, role and index
//   two-epochs         never pods of two epochs of one task Running at once (terminating included:
//                      a pod still runs, and may still write checkpoints, through its grace period)
//   orphan             every Valley pod/Service/Secret/ConfigMap has a live TrainingTask as its
//                      controller (after `orphan_grace`: the garbage collector is asynchronous)
//   final-phase        every task ends as its creator expected (annotation chaos.valley.dev/expect:
//                      Succeeded, Failed, Suspended, or Deleted = gone with everything it owned)
//   final-cost         a finished task's status.cost.final equals the cost of its pods' intervals
//                      (GPU share x price x time) within one cent; a pod seen Running and then gone
//                      ended somewhere between the two looks, which widens the interval allowed. A
//                      terminal phase is final in Kubernetes: a pod's first terminal end stands, and
//                      one the simulator later shows running again, or ending again later, is
//                      counted (podsResurrected, podsEndRewritten)
//   accrued-decreased  status.cost.accrued never goes down from one version of a task to the next
//   generation-backwards  status.observedGeneration never goes down
//   cost-record        a task that ended (its final cost written, or deleted after one of its pods
//                      held a GPU) while this build alone ran has a durable record of its cost in
//                      the operator's namespace (valley-cost-<uid>), final, equal to the status's
//                      final where the task showed one
//   restarted-by-window  within a window the campaign marks (an operator upgrade or downgrade), no
//                      task is restarted for a cause an operator could invent: status.restarts'
//                      startFailures and disruptions, and failures of a task expected to succeed,
//                      stay as they were, unless one of its pods was (when the window began or
//                      ended) on a node disrupted meanwhile, or on one already gone or noticed
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace valley::chaos {

using json = nlohmann::json;

// What a GPU-hour costs, by vendor ("nvidia", "amd") and capacity class ("on-demand", "spot"), in
// micro-units; the run's PricingPolicy says the same with no electricity and multiplier 1.
struct PriceBook {
  std::map<std::pair<std::string, std::string>, int64_t> per_gpu_hour;
};

// One look at the namespace: each list taken at about `t` (wall-clock seconds since the Unix epoch,
// the clock pods' times are written in).
struct Snapshot {
  double t = 0;
  std::vector<json> tasks, pods, nodes, owned;  // owned: Services, Secrets, ConfigMaps
  std::vector<json> cost_records;               // ConfigMaps labelled valley.dev/cost-record (finish only)
};

struct Violation {
  double t = 0;
  std::string rule, object, detail;
};

class Checker {
 public:
  explicit Checker(PriceBook prices, double orphan_grace_seconds = 60) : prices_(std::move(prices)), orphan_grace_(orphan_grace_seconds) {}

  void observe(const Snapshot& s);
  // A task's consecutive versions, in the order the API server wrote them.
  void task_update(double t, const json& before, const json& after);
  // The last look, once the run has settled: also checks final phases and costs.
  void finish(const Snapshot& s);
  // A window (restarted-by-window): its first look, and its last with the nodes disrupted meanwhile;
  // a task with a pod on one of those in any look of the window (observe) is excused.
  void window_begin(const Snapshot& s);
  void window_end(const Snapshot& s, const std::string& window, const std::set<std::string>& disrupted_nodes);

  // The spans when only the build that keeps cost records runs (from the start to the downgrade,
  // from the upgrade to the end): the cost-record rule holds tasks that ended inside one, less
  // `margin` at each end; none before the first span opens.
  void records_kept_from(double t, double margin) { record_spans_.push_back({t + margin, 1e300}); }
  void records_kept_until(double t, double margin) {
    if (!record_spans_.empty()) record_spans_.back().second = t - margin;
  }

  const std::vector<Violation>& violations() const { return violations_; }
  // Counts for the report: looks taken, pods followed, tasks whose cost was checked, the widest
  // uncertainty allowed for a task (micro-units), the longest an object outlived its owner.
  json summary() const;

 private:
  struct PodRecord {
    std::string task_uid, node, name;
    int64_t share_milli = 0;  // thousandths of a GPU; -1: a resource this checker cannot price
    std::optional<double> start, end;  // from the pod's status
    std::set<long long> starts_seen;   // every start the pod's status gave, in ms (one, unless it moved)
    bool terminal_seen = false;        // seen Succeeded/Failed: its end is final (Kubernetes' pod lifecycle)
    bool resurrected = false;          // seen running again after that (the simulator, never a kubelet)
    bool end_rewritten = false;        // its finishedAt changed after it was seen terminal (likewise)
    std::optional<double> last_seen_alive, first_seen_gone;  // from the looks
    // When its deletion was asked (deletionTimestamp less its grace): its containers may have
    // stopped from then on while its status still said Running (the node reports late).
    std::optional<double> deletion_asked;
  };
  void violation(double t, const std::string& rule, const std::string& object, const std::string& detail);
  void follow_pods(const Snapshot& s);
  void check_pods(const Snapshot& s);
  void check_orphans(const Snapshot& s, bool final);
  void check_final(const Snapshot& s);
  void follow_ends(const Snapshot& s);
  void check_records(const Snapshot& s);
  std::optional<int64_t> price_of(const std::string& node) const;
  // Tasks (by uid) with a pod on one of `nodes`.
  std::set<std::string> tasks_on(const Snapshot& s, const std::set<std::string>& nodes) const;

  PriceBook prices_;
  double orphan_grace_;
  std::vector<Violation> violations_;
  std::set<std::string> reported_;  // rule + object, so a lasting violation is reported once
  std::map<std::string, PodRecord> pods_;                         // by pod uid
  std::map<std::string, int64_t> charged_until_ms_;  // by pod uid: how far a status ledger charged it (for the report)
  std::map<std::string, std::pair<std::string, std::string>> node_class_;  // node -> vendor, class
  std::map<std::string, double> orphan_since_;                    // object uid -> first seen orphaned
  Snapshot window_begin_;  // the open window's first look
  bool window_open_ = false;
  // Of the open window's looks: node -> the tasks (controller uids) seen with a pod bound there. A
  // pod made and disrupted between the first look and the last is seen only in the looks between.
  std::map<std::string, std::set<std::string>> window_seen_;
  int windows_ = 0, window_tasks_ = 0;
  int looks_ = 0, costs_checked_ = 0, costs_unpriceable_ = 0;
  int64_t widest_uncertainty_ = 0;
  double longest_orphan_ = 0;  // how long an object outlived its owner before it was collected
  std::vector<std::pair<double, double>> record_spans_;  // [from, until] in wall-clock seconds
  struct TaskEnd {
    std::string name;
    double t = 0;                     // when the end was first seen
    std::optional<int64_t> final;     // status.cost.finalMicros, when it finished
    bool deleted = false;
  };
  std::map<std::string, TaskEnd> ends_;    // by task uid
  std::map<std::string, std::string> live_tasks_;  // uid -> name, as of the last look
  int records_checked_ = 0;
};

}  // namespace valley::chaos
