// valleyctl outputs NAME: where the task's outputs are kept, whether Valley has written its report,
// and what is there (listed from the store with the task's Secret, as the operator reads it).
// valleyctl report NAME [--file PATH]: Valley's report page written to PATH (-o json: the report's
// JSON on standard output).
#include <fstream>
#include <functional>
#include <iostream>

#include "cmd/valleyctl/common.h"
#include "cmd/valleyctl/table.h"
#include "controllers/api/spec.h"
#include "controllers/lifecycle/transfers.h"
#include "operator/kube/error.h"
#include "operator/storage/task_store.h"

namespace valley::ctl {
namespace {

// The task, its outputs location and an open store; nullopt after telling the user why not.
struct TaskOutputs {
  json task;
  api::TaskSpec::Outputs where;
  std::unique_ptr<storage::ObjectStore> store;
};

std::optional<TaskOutputs> open_outputs(kube::Client& client, const std::string& ns, const std::string& name) {
  TaskOutputs t;
  t.task = client.get(kube::resources::kTrainingTasks, ns, name);
  auto parsed = api::parse_task(t.task);
  if (!parsed.spec) {
    std::cerr << "valleyctl: " << ns << "/" << name << " has an invalid spec: " << parsed.errors.front() << "\n";
    return std::nullopt;
  }
  if (!parsed.spec->outputs) {
    std::cerr << "valleyctl: " << ns << "/" << name << " keeps no outputs (no spec.outputs and no s3:// checkpoint)\n";
    return std::nullopt;
  }
  t.where = *parsed.spec->outputs;
  std::string error;
  t.store = storage::open_task_store(client, ns, t.where.secret, t.where.uri, "outputs", &error);
  if (!t.store) {
    std::cerr << "valleyctl: " << error << "\n";
    return std::nullopt;
  }
  return t;
}

// Runs `use` on task args[1]'s outputs (after checking the arguments against `usage`): its exit code.
int with_outputs(const Flags& flags, const std::vector<std::string>& args, const char* usage,
                 const std::function<int(const std::string& ns, TaskOutputs& t)>& use) {
  if (!one_argument(args, usage)) return 2;
  return with_cluster([&] {
    std::string ns;
    auto client = connect(flags, &ns);
    auto t = open_outputs(*client, ns, args[1]);
    return t ? use(ns, *t) : 1;
  });
}

}  // namespace

int cmd_outputs(const Flags& flags, const std::vector<std::string>& args) {
  return with_outputs(flags, args, "valleyctl outputs NAME [-n NAMESPACE]", [&](const std::string& ns, TaskOutputs& t) {
    const json kept = t.task.value("status", json::object()).value("outputs", json::object());
    std::cout << "Outputs of " << ns << "/" << args[1] << " in " << t.where.uri << "\n";
    if (kept.contains("time")) {
      std::cout << "Kept:   " << kept.value("files", 0) << " files, " << kept.value("bytes", 0) << " bytes"
                << (kept.value("partial", false) ? " (partial: the task did not succeed)" : "") << "; report written " << kept.value("time", "")
                << "\n";
    } else if (kept.contains("error")) {
      std::cout << "Not yet kept: " << kept.value("error", "") << " (retried)\n";
    } else {
      std::cout << "Not yet kept: the task has not ended, or its pods are still stopping\n";
    }
    std::cout << "\n";
    Table table({"BYTES", "KEY"});
    for (const auto& o : t.store->list()) table.add({std::to_string(o.size), o.key});
    table.print(std::cout);
    return 0;
  });
}

int cmd_report(const Flags& flags, const std::vector<std::string>& args) {
  return with_outputs(flags, args, "valleyctl report NAME [-n NAMESPACE] [--file PATH] [-o json]", [&](const std::string&, TaskOutputs& t) {
    const bool as_json = flags.get("output") == "json";
    auto page = t.store->get(as_json ? lifecycle::kReportJson : lifecycle::kReportHtml);
    if (!page) {
      std::cerr << "valleyctl: no report in " << t.where.uri << " yet: Valley writes it once the task has ended and its pods have stopped\n";
      return 1;
    }
    if (as_json) {
      std::cout << *page << "\n";
      return 0;
    }
    const std::string path = flags.get("file").empty() ? args[1] + "-report.html" : flags.get("file");
    std::ofstream out(path, std::ios::trunc);
    out << *page;
    if (!out.flush()) {
      std::cerr << "valleyctl: cannot write " << path << "\n";
      return 1;
    }
    std::cout << "wrote " << path << " (" << page->size() << " bytes): open it in a browser\n";
    return 0;
  });
}

}  // namespace valley::ctl
