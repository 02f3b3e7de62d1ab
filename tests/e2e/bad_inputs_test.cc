// The bad-input catalogue (tests/bad-inputs/, written by its generate.py) against the real API server
// and one operator: every case must have the outcome its header states (refused by the API server
// with that message, or taken and reported with that phase or Event), while a healthy task beside
// them finishes untouched and the operator never exits.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "operator/kube/timefmt.h"
#include "operator/storage/checkpoint_record.h"
#include "tests/chaos/proxy.h"
#include "tests/e2e/task_fixture.h"
#include "tests/storage/versitygw.h"

namespace valley::e2e {
namespace {

namespace fs = std::filesystem;
using chaos::Proxy;
using kube::resources::kEvents;
using kube::resources::kPricingPolicies;
using kube::resources::kSecrets;

struct Case {
  std::string family, file, description, expect, message;
  std::string body;  // everything after the header
};

// A case's text with each ${PLACEHOLDER} replaced by what the running test knows (endpoints,
// credentials, the time now).
std::string fill_placeholders(std::string text, const std::map<std::string, std::string>& values) {
  for (const auto& [key, value] : values)
    for (size_t at; (at = text.find(key)) != std::string::npos;) text.replace(at, key.size(), value);
  return text;
}

std::vector<Case> cases(const std::string& family) {
  std::vector<Case> out;
  const fs::path dir = fs::path(VALLEY_SOURCE_DIR) / "tests/bad-inputs" / family;
  for (const auto& entry : fs::directory_iterator(dir)) {
    Case c;
    c.family = family;
    c.file = entry.path().stem().string();
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    std::string all = text.str(), line;
    size_t pos = 0;
    while (pos < all.size() && all[pos] == '#') {
      size_t end = all.find('\n', pos);
      line = all.substr(pos, end - pos);
      pos = end == std::string::npos ? all.size() : end + 1;
      if (line.rfind("# expect: ", 0) == 0) c.expect = line.substr(10);
      else if (line.rfind("# message: ", 0) == 0) c.message = line.substr(11);
      else if (line == "# ---") break;
      else if (c.description.empty()) c.description = line.substr(2);
    }
    c.body = all.substr(pos);
    out.push_back(c);
  }
  std::sort(out.begin(), out.end(), [](const Case& a, const Case& b) { return a.file < b.file; });
  return out;
}

class BadInputsTest : public TaskTest {
 protected:
  std::vector<std::string> operator_flags() const override {
    return {"--planner-min-resize-interval=2s", "--unschedulable-timeout=3s", "--pricing-policy=" + ns,
            "--checkpoint-poll-interval=1s", "--failure-settle=2s"};
  }

  // The Events recorded about `kind`/`name`: reason and note of each.
  std::vector<std::pair<std::string, std::string>> events_about(const std::string& kind, const std::string& name, const std::string& event_ns) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& e : admin->list(kEvents, event_ns).items) {
      const json regarding = e.value("regarding", json::object());
      if (regarding.value("kind", "") == kind && regarding.value("name", "") == name) out.emplace_back(e.value("reason", ""), e.value("note", ""));
    }
    return out;
  }
  // Whether one of `events` has `reason` and a note containing `text` (the fixture's has_event waits
  // on the namespace's Events instead).
  static bool names_event(const std::vector<std::pair<std::string, std::string>>& events, const std::string& reason, const std::string& text) {
    return std::any_of(events.begin(), events.end(),
                       [&](const auto& e) { return e.first == reason && e.second.find(text) != std::string::npos; });
  }
  static std::string describe(const std::vector<std::pair<std::string, std::string>>& events) {
    std::string out;
    for (const auto& [reason, note] : events) out += reason + ": " + note + "\n";
    return out;
  }

  // Whether task `name` shows what `c` expects; `seen` says what it shows.
  bool outcome(const Case& c, const std::string& name, std::string& seen) {
    json t = admin->get(kTrainingTasks, ns, name);
    const json st = t.value("status", json::object());
    seen = "phase " + st.value("phase", "") + " (" + st.value("message", "") + ")";
    if (c.expect.rfind("phase=", 0) == 0)
      return st.value("phase", "") == c.expect.substr(6) && st.value("message", "").find(c.message) != std::string::npos;
    if (c.expect.rfind("event=", 0) == 0) {
      auto events = events_about("TrainingTask", name, ns);
      seen += "; events:\n" + describe(events);
      return names_event(events, c.expect.substr(6), c.message);
    }
    seen = "unknown expectation " + c.expect;
    return false;
  }

  // Waits for every accepted case (task name -> case) to show its outcome; reports the others.
  void expect_outcomes(const std::map<std::string, Case>& accepted, std::chrono::seconds timeout) {
    std::map<std::string, std::string> pending;
    for (const auto& [name, c] : accepted) pending[name] = "";
    eventually([&] {
      for (auto it = pending.begin(); it != pending.end();) {
        std::string seen;
        bool ok = false;
        try {
          ok = outcome(accepted.at(it->first), it->first, seen);
        } catch (const kube::KubeError& e) {
          seen = e.what();
        }
        it->second = seen;
        it = ok ? pending.erase(it) : std::next(it);
      }
      return pending.empty();
    }, timeout);
    for (const auto& [name, seen] : pending) {
      const Case& c = accepted.at(name);
      ADD_FAILURE() << c.family << "/" << c.file << " (" << c.description << "): expected " << c.expect
                    << (c.message.empty() ? "" : " with \"" + c.message + "\"") << ", saw " << seen;
    }
  }

  void expect_rejected(const Case& c, const std::function<void()>& create) {
    try {
      create();
      ADD_FAILURE() << c.family << "/" << c.file << " (" << c.description << "): the API server took it";
    } catch (const kube::KubeError& e) {
      EXPECT_TRUE(e.http_status() == 422 || e.http_status() == 400) << c.file << ": HTTP " << e.http_status() << " " << e.what();
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << c.file << ": " << e.what();
    }
  }

  // Whether every task named by the map's keys is Running within 90 s.
  template <typename Map>
  bool all_running(const Map& tasks) {
    return eventually([&] {
      for (const auto& entry : tasks)
        if (phase(entry.first) != "Running") return false;
      return true;
    }, 90s);
  }

  // Each family's tasks go once their outcomes are checked: the next family needs the GPUs.
  void remove_tasks(const std::map<std::string, Case>& tasks) {
    for (const auto& [name, c] : tasks) admin->remove(kTrainingTasks, ns, name);
  }

  void create_policy(const json& spec) {
    admin->create(kPricingPolicies, "", {{"apiVersion", "valley.dev/v1beta1"}, {"kind", "PricingPolicy"}, {"metadata", {{"name", ns}}}, {"spec", spec}});
  }

  json running_task(const std::string& name, json spec_patch = json::object()) {
    json spec = mpi_spec(1, 1);
    spec["runPolicy"] = {{"backoffLimit", 5}};
    spec.merge_patch(spec_patch);
    return apply(spec, name);
  }
};

// The catalogue, one kind of input at a time: each case's outcome is awaited, then its tasks go.
class BadInputsCatalogue : public BadInputsTest {
 protected:
  // TrainingTasks: `family` tasks/ (what a user gets wrong) or attacks/ (what a tenant tries against Valley).
  void task_cases(const std::string& family) {
    std::map<std::string, Case> accepted;
    for (const auto& c : cases(family)) {
      json object = json::parse(c.body);
      if (object["metadata"]["name"] == "case") object["metadata"]["name"] = c.file;
      if (c.expect == "rejected") {
        ++rejected_;
        expect_rejected(c, [&] { admin->create(kTrainingTasks, ns, object); });
      } else {
        ASSERT_NO_THROW(admin->create(kTrainingTasks, ns, object)) << c.file;
        accepted[object["metadata"]["name"]] = c;
      }
    }

    expect_outcomes(accepted, 120s);
    remove_tasks(accepted);
    taken_ += accepted.size();
  }
  void checkpoint_cases(testing::VersityGw& s3) {
    std::map<std::string, Case> accepted;
    // Checkpoint records: a checkpointing task per case, its latest.json written as the case says.
    json secret = {{"metadata", {{"name", "s3"}}}, {"stringData", s3.env()}};
    admin->create(kSecrets, ns, secret);
    std::map<std::string, std::string> records;
    for (const auto& c : cases("checkpoints")) {
      const std::string name = "ckpt-" + c.file;
      running_task(name, {{"checkpoint", {{"uri", std::string("s3://") + testing::VersityGw::kBucket + "/" + ns + "/" + name}, {"secretRef", {{"name", "s3"}}}}}});
      records[name] = c.body;
      accepted[name] = c;
    }
    ASSERT_TRUE(all_running(records)) << "the checkpointing tasks did not start";
    for (const auto& [name, body] : records) s3.store(ns + "/" + name)->put(storage::kLatestKey, body);
    expect_outcomes(accepted, 120s);
    remove_tasks(accepted);
    taken_ += accepted.size();
  }
  void pod_cases() {
    std::map<std::string, Case> accepted;
    // Pod states: a running task per case, its worker's status patched as a kubelet could write it.
    std::map<std::string, Case> pod_cases;
    for (const auto& c : cases("pods")) {
      const std::string name = "pod-" + c.file;
      running_task(name);
      pod_cases[name] = c;
    }
    ASSERT_TRUE(all_running(pod_cases)) << "the pod-state tasks did not start";
    for (const auto& [name, c] : pod_cases) {
      auto patch = [&, name = name, body = c.body]() mutable {
        // ${NOW}: a condition as a component writes it now (one from the past is stale to the
        // disruption controller, which resets it).
        const std::string now = kube::format_time(std::chrono::system_clock::now());
        admin->patch(kube::resources::kPods, ns, name + "-worker-0", kube::PatchType::Merge,
                     json::parse(fill_placeholders(body, {{"${NOW}", now}})), "status");
      };
      if (c.expect == "rejected") {
        ++rejected_;
        expect_rejected(c, patch);
      } else {
        ASSERT_NO_THROW(patch()) << c.file;
        accepted[name] = c;
      }
    }
    std::this_thread::sleep_for(5s);  // what is still Running then stays so
    expect_outcomes(accepted, 120s);
    remove_tasks(accepted);
    taken_ += accepted.size();
  }
  void store_cases(testing::VersityGw& s3) {
    std::map<std::string, Case> accepted;
    // Failing checkpoint stores: each case's Secret (placeholders filled in) and a task using it.
    Proxy slow_s3("127.0.0.1", std::stoi(s3.endpoint().substr(s3.endpoint().rfind(':') + 1)));
    slow_s3.set_delay(3s);
    const std::map<std::string, std::string> store_values = {
        {"${S3}", s3.endpoint()}, {"${SLOW_S3}", "http://127.0.0.1:" + std::to_string(slow_s3.port())},
        {"${ACCESS}", testing::VersityGw::kAccess}, {"${SECRET}", testing::VersityGw::kSecret}};
    for (const auto& c : cases("stores")) {
      const std::string name = "store-" + c.file;
      json body = json::parse(fill_placeholders(c.body, store_values));
      json checkpoint = body["checkpoint"];
      if (checkpoint.contains("secretRef") && checkpoint["secretRef"]["name"] == "store") checkpoint["secretRef"]["name"] = name;
      if (body["secret"].is_object()) admin->create(kSecrets, ns, {{"metadata", {{"name", name}}}, {"stringData", body["secret"]}});
      running_task(name, {{"checkpoint", checkpoint}});
      accepted[name] = c;
    }
    expect_outcomes(accepted, 120s);
    remove_tasks(accepted);
    taken_ += accepted.size();
  }
  void policy_cases() {
    // PricingPolicies: each case in turn as the policy the operator reads.
    for (const auto& c : cases("policies")) {
      json object = json::parse(c.body);
      admin->remove(kPricingPolicies, "", ns);
      ASSERT_TRUE(eventually([&] {
        try {
          admin->get(kPricingPolicies, "", ns);
          return false;
        } catch (const kube::KubeError&) {
          return true;
        }
      }, 10s));
      ++policy_cases_;
      if (c.expect == "rejected") {
        expect_rejected(c, [&] { create_policy(object["spec"]); });
      } else {
        create_policy(object["spec"]);
        std::vector<std::pair<std::string, std::string>> events;
        EXPECT_TRUE(eventually([&] {
          events = events_about("PricingPolicy", ns, "default");
          return names_event(events, c.expect.substr(6), c.message);
        }, 20s)) << "policies/" << c.file << " (" << c.description << "): expected " << c.expect << " with \"" << c.message
                 << "\", events:\n" << describe(events);
      }
    }
  }
  int rejected_ = 0, policy_cases_ = 0;
  size_t taken_ = 0;
};

TEST_F(BadInputsCatalogue, EveryCaseHasItsOutcomeAndNothingElseSuffers) {
  wait_until_no_active_valley_work(*admin);
  create_policy(json::parse(R"({"gpu":[{"match":{"vendor":"nvidia"},"onDemand":"3.60","spot":"1.80"},{"onDemand":"2.00"}]})"));
  // The bystander: a healthy task that must finish while all this goes on.
  apply(mpi_spec(1, 2, {{"sim.valley.dev/run-time", "90s"}}), "bystander");
  task_cases("tasks");
  task_cases("attacks");
  if (HasFatalFailure()) return;
  testing::VersityGw s3;
  checkpoint_cases(s3);
  if (HasFatalFailure()) return;
  pod_cases();
  if (HasFatalFailure()) return;
  store_cases(s3);
  if (HasFatalFailure()) return;
  policy_cases();
  if (HasFatalFailure()) return;
  EXPECT_TRUE(wait_phase("Succeeded", 180s, "bystander")) << "the bystander task: " << phase("bystander");
  ASSERT_TRUE(op_);
  EXPECT_EQ(op_->wait(1ms), -1) << "the operator exited:\n" << operator_log();
  const auto total = rejected_ + taken_ + static_cast<size_t>(policy_cases_);
  EXPECT_GE(total, 200u);
  std::cout << "bad inputs: " << total << " cases, " << rejected_ << " refused by the API server, " << taken_
            << " taken and reported, " << policy_cases_ << " pricing policies\n";
  admin->remove(kPricingPolicies, "", ns);
}

}  // namespace
}  // namespace valley::e2e
