// bench_controlplane: the load side of the control-plane benchmark (bench/controlplane/run.sh).
//
//   bench_controlplane watch --kubeconfig K -n NS --system S --tasks N --workers W --ready-file F [--timeout 900]
//     Caches the namespace's pods (and the system's task objects), touches F once synced, and
//     prints {"podsRunningAt","tasksRunningAt"} (Unix seconds) when all N x (1 + W) pods are
//     Running and all N tasks say so. Exit 1 on timeout, with what it saw (and when all pods were
//     Running, if they were).
//   bench_controlplane apply --kubeconfig K -n NS --system S --tasks N --workers W [--parallel 32]
//     Creates the load at once from `parallel` threads: N TrainingTasks (S=valley), N MPIJobs
//     (S=mpi-operator), or, for S=floor, what an operator would create for them (per task a
//     headless Service, a hostfile ConfigMap, an SSH Secret, a launcher and W worker pods).
//     Prints {"startedAt","createdAt","objects","cpuSeconds","maxRssKb"} (its own rusage).
//
// Workers ask for one nvidia.com/gpu each; the launcher for none.
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include "operator/kube/client.h"
#include "operator/kube/config.h"
#include "operator/kube/informer.h"

using namespace valley;
using json = nlohmann::json;

namespace {

const kube::Resource kTrainingTasks{"valley.dev", "v1beta1", "trainingtasks", "TrainingTask", true};
const kube::Resource kMpiJobs{"kubeflow.org", "v2beta1", "mpijobs", "MPIJob", true};
constexpr const char* kImage = "valley.dev/bench:1";

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string task_name(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "t%04d", i);
  return buf;
}

json container(const std::string& name, int gpus) {
  json c = {{"name", name}, {"image", kImage}, {"command", {"sleep", "infinity"}}};
  if (gpus > 0) c["resources"] = {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}};
  return c;
}

json training_task(const std::string& name, int workers) {
  return {{"apiVersion", "valley.dev/v1beta1"},
          {"kind", "TrainingTask"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"taskType", "MPI"},
            {"replicas", {{"min", workers}, {"max", workers}}},
            {"master", {{"image", kImage}}},
            {"worker", {{"image", kImage}, {"gpus", "1"}}}}}};
}

json mpi_job(const std::string& name, int workers) {
  auto spec = [](const std::string& role, int gpus) {
    return json{{"spec", {{"containers", json::array({container(role, gpus)})}}}};
  };
  return {{"apiVersion", "kubeflow.org/v2beta1"},
          {"kind", "MPIJob"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"slotsPerWorker", 1},
            {"runPolicy", {{"cleanPodPolicy", "Running"}}},
            {"mpiReplicaSpecs",
             {{"Launcher", {{"replicas", 1}, {"template", spec("launcher", 0)}}},
              {"Worker", {{"replicas", workers}, {"template", spec("worker", 1)}}}}}}}};
}

// What an MPI operator creates for one task, created directly.
void create_floor(kube::Client& c, const std::string& ns, const std::string& name, int workers) {
  json labels = {{"bench.valley.dev/task", name}};
  c.create(kube::resources::kServices, ns,
           {{"apiVersion", "v1"},
            {"kind", "Service"},
            {"metadata", {{"name", name}, {"labels", labels}}},
            {"spec", {{"clusterIP", "None"}, {"selector", labels}, {"publishNotReadyAddresses", true}}}});
  std::string hostfile;
  for (int w = 0; w < workers; ++w) hostfile += name + "-worker-" + std::to_string(w) + "." + name + " slots=1\n";
  c.create(kube::resources::kConfigMaps, ns,
           {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name + "-config"}, {"labels", labels}}},
            {"data", {{"hostfile", hostfile}}}});
  c.create(kube::resources::kSecrets, ns,
           {{"apiVersion", "v1"}, {"kind", "Secret"}, {"metadata", {{"name", name + "-ssh"}, {"labels", labels}}},
            {"type", "kubernetes.io/ssh-auth"},
            {"stringData", {{"ssh-privatekey", "bench"}, {"ssh-publickey", "bench"}}}});
  auto pod = [&](const std::string& pod_name, const std::string& role, int gpus) {
    json l = labels;
    l["bench.valley.dev/role"] = role;
    return json{{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", pod_name}, {"labels", l}}},
                {"spec", {{"hostname", pod_name}, {"subdomain", name}, {"containers", json::array({container(role, gpus)})}}}};
  };
  c.create(kube::resources::kPods, ns, pod(name + "-launcher", "launcher", 0));
  for (int w = 0; w < workers; ++w) c.create(kube::resources::kPods, ns, pod(name + "-worker-" + std::to_string(w), "worker", 1));
}

bool task_running(const std::string& system, const json& obj) {
  const json& status = obj.contains("status") ? obj["status"] : json::object();
  if (system == "valley") return status.value("phase", "") == "Running";
  for (const auto& c : status.value("conditions", json::array()))
    if (c.value("type", "") == "Running" && c.value("status", "") == "True") return true;
  return false;
}

int watch(const std::map<std::string, std::string>& o, int tasks, int workers) {
  auto config = kube::load_kubeconfig(o.at("kubeconfig"));
  kube::HttpOptions http;
  http.qps = 0;
  kube::Client client(config, http);
  const std::string ns = o.at("namespace"), system = o.at("system");
  kube::InformerOptions in_namespace;
  in_namespace.ns = ns;
  kube::Informer pods(client, kube::resources::kPods, in_namespace);
  std::unique_ptr<kube::Informer> task_informer;
  if (system != "floor") task_informer = std::make_unique<kube::Informer>(client, system == "valley" ? kTrainingTasks : kMpiJobs, in_namespace);
  pods.start();
  if (task_informer) task_informer->start();
  if (!pods.wait_for_sync(std::chrono::seconds(60)) || (task_informer && !task_informer->wait_for_sync(std::chrono::seconds(60)))) {
    std::cerr << "watch: caches did not sync\n";
    return 1;
  }
  std::ofstream(o.at("ready-file")) << "ready\n";
  const size_t want_pods = static_cast<size_t>(tasks) * static_cast<size_t>(workers + 1);
  double pods_at = 0, tasks_at = system == "floor" ? -1 : 0;
  const double deadline = unix_now() + std::stod(o.count("timeout") ? o.at("timeout") : "900");
  size_t running = 0, tasks_running = 0;
  while (unix_now() < deadline) {
    double now = unix_now();
    running = 0;
    for (const auto& p : pods.store().list())
      if ((*p)["status"].value("phase", "") == "Running" && !(*p)["metadata"].contains("deletionTimestamp")) ++running;
    if (pods_at == 0 && running >= want_pods) pods_at = now;
    if (task_informer && tasks_at == 0) {
      tasks_running = 0;
      for (const auto& t : task_informer->store().list())
        if (task_running(system, *t)) ++tasks_running;
      if (tasks_running >= static_cast<size_t>(tasks)) tasks_at = now;
    }
    if (pods_at > 0 && tasks_at != 0) {
      std::cout << json{{"podsRunningAt", pods_at}, {"tasksRunningAt", tasks_at < 0 ? pods_at : tasks_at}}.dump() << "\n";
      pods.stop();
      if (task_informer) task_informer->stop();
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::cerr << "watch: timed out with " << running << "/" << want_pods << " pods and " << tasks_running << "/" << tasks
            << " tasks Running\n";
  json partial = {{"timedOut", true}, {"podsRunning", running}, {"tasksRunning", tasks_running}};
  if (pods_at > 0) partial["podsRunningAt"] = pods_at;
  std::cout << partial.dump() << "\n";
  return 1;
}

int apply(const std::map<std::string, std::string>& o, int tasks, int workers) {
  auto config = kube::load_kubeconfig(o.at("kubeconfig"));
  const std::string ns = o.at("namespace"), system = o.at("system");
  const int parallel = std::stoi(o.count("parallel") ? o.at("parallel") : "32");
  std::atomic<int> next{0}, failed{0};
  std::string first_error;
  std::mutex error_mu;
  double started = unix_now();
  std::vector<std::thread> threads;
  for (int t = 0; t < parallel; ++t) {
    threads.emplace_back([&] {
      kube::HttpOptions http;
      http.qps = 0;  // no client-side limit: what the API server allows
      http.user_agent = "valley-bench";
      kube::Client c(config, http);
      for (int i = next++; i < tasks; i = next++) {
        try {
          std::string name = task_name(i);
          if (system == "valley") c.create(kTrainingTasks, ns, training_task(name, workers));
          else if (system == "mpi-operator") c.create(kMpiJobs, ns, mpi_job(name, workers));
          else create_floor(c, ns, name, workers);
        } catch (const std::exception& e) {
          ++failed;
          std::lock_guard lock(error_mu);
          if (first_error.empty()) first_error = e.what();
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  double created = unix_now();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  double cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  if (failed > 0) {
    std::cerr << "apply: " << failed << " tasks not created; first error: " << first_error << "\n";
    return 1;
  }
  int per_task = system == "floor" ? 3 + 1 + workers : 1;
  std::cout << json{{"startedAt", started}, {"createdAt", created}, {"objects", tasks * per_task},
                    {"cpuSeconds", cpu}, {"maxRssKb", ru.ru_maxrss}}.dump()
            << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: bench_controlplane watch|apply --kubeconfig K -n NS --system valley|mpi-operator|floor --tasks N --workers W ...\n";
    return 2;
  }
  std::string mode = argv[1];
  std::map<std::string, std::string> o;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    o[k == "-n" ? "namespace" : k.substr(2)] = argv[i + 1];
  }
  try {
    for (const char* k : {"kubeconfig", "namespace", "system", "tasks", "workers"})
      if (!o.count(k)) throw std::invalid_argument(std::string("--") + k + " is required");
    const std::string& s = o["system"];
    if (s != "valley" && s != "mpi-operator" && s != "floor") throw std::invalid_argument("--system: valley, mpi-operator or floor");
    int tasks = std::stoi(o["tasks"]), workers = std::stoi(o["workers"]);
    if (mode == "watch") {
      if (!o.count("ready-file")) throw std::invalid_argument("--ready-file is required");
      return watch(o, tasks, workers);
    }
    if (mode == "apply") return apply(o, tasks, workers);
    throw std::invalid_argument("unknown mode " + mode);
  } catch (const std::exception& e) {
    std::cerr << "bench_controlplane: " << e.what() << "\n";
    return 2;
  }
}
