// valley-live: the live economics benchmark's driver (bench/live/run.sh runs it; see there).
//
//   valley-live slice  SIM-OPTIONS --max-duration-hours H --write FILE
//       the slice valley-sim's options name (trace, hours, --load, --max-jobs), durations capped,
//       as an ITP trace that both the simulator and the live runs then replay whole
//   valley-live kueue-objects SIM-OPTIONS --fleet F --namespace NS
//       Kueue's flavors, priority classes and queues for the fleet (a JSON List for kubectl apply)
//   valley-live policy --pricing FILE --compression C --flat OUT --operator OUT
//       the PricingPolicy without time-of-use windows (for the simulator and the meter), and the same
//       with its timers divided by C (for the operator)
//   valley-live run SIM-OPTIONS --system valley|kueue --kubeconfig K --namespace NS --fleet F
//       --compression C --horizon-hours H --out DIR [--checkpoint-prefix s3://B/P/ --checkpoint-secret S]
//       one live run (harness.h); the store's credentials from the AWS_* environment
//
// SIM-OPTIONS are valley-sim's (--trace --from-hour --to-hour --max-jobs --load --cluster --spot
// --workload --profiles --pricing), read by the simulator's own code.
#include <fstream>
#include <iostream>

#include "bench/live/harness.h"
#include "bench/sim/input_files.h"
#include "operator/kube/config.h"
#include "operator/yaml_json.h"

using namespace valley;
using json = nlohmann::json;

namespace {

sim::Options parse(int argc, char** argv) {
  sim::Options opt = sim::default_options();
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0 || i + 1 >= argc) throw sim::InputError("bad argument " + a + " (see bench/live/main.cc)");
    opt[a.substr(2)] = argv[++i];
  }
  return opt;
}

const std::string& need(const sim::Options& opt, const std::string& key) {
  auto it = opt.find(key);
  if (it == opt.end() || it->second.empty()) throw sim::InputError("--" + key + " is required");
  return it->second;
}

json policy_document(const std::string& path) {
  std::string error;
  auto docs = parse_yaml(kube::read_file(path, "PricingPolicy"), &error);
  if (!docs) throw sim::InputError(path + ": " + error);
  for (const auto& d : *docs)
    if (d.value.value("kind", "") == "PricingPolicy") return d.value;
  throw sim::InputError(path + ": no PricingPolicy in it");
}

int slice(sim::Options& opt) {
  double kept = 1;
  const sim::Inputs in = sim::read_inputs(opt, &kept);
  const auto cap = static_cast<int64_t>(std::stod(need(opt, "max-duration-hours")) * 3600);
  std::ofstream(need(opt, "write")) << live::slice_csv(in.jobs, cap);
  std::cerr << "valley-live: " << in.jobs.size() << " jobs (" << kept * 100 << "% of the slice kept)\n";
  return 0;
}

int kueue_objects(sim::Options& opt) {
  double kept = 1;
  const sim::Inputs in = sim::read_inputs(opt, &kept);
  json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", live::kueue_objects(in, need(opt, "fleet"), need(opt, "namespace"))}};
  std::cout << list.dump(2) << "\n";
  return 0;
}

int policy(sim::Options& opt) {
  const json flat = live::flat_policy(policy_document(need(opt, "pricing")));
  std::ofstream(need(opt, "flat")) << flat.dump(2) << "\n";
  std::ofstream(need(opt, "operator")) << live::compressed_policy(flat, std::stod(need(opt, "compression"))).dump(2) << "\n";
  return 0;
}

int run(sim::Options& opt) {
  double kept = 1;
  const sim::Inputs in = sim::read_inputs(opt, &kept);
  live::RunSettings s;
  const std::string system = need(opt, "system");
  if (system != "valley" && system != "kueue") throw sim::InputError("--system: valley or kueue, not " + system);
  s.system = system == "valley" ? live::System::Valley : live::System::Kueue;
  s.submit.ns = need(opt, "namespace");
  s.submit.fleet = need(opt, "fleet");
  s.submit.compression = std::stod(need(opt, "compression"));
  if (s.submit.compression <= 0) throw sim::InputError("--compression must be positive");
  s.horizon = std::stod(need(opt, "horizon-hours")) * 3600;
  s.out = need(opt, "out");
  if (s.system == live::System::Valley) {
    s.submit.checkpoint_prefix = need(opt, "checkpoint-prefix");
    s.submit.checkpoint_secret = need(opt, "checkpoint-secret");
  }
  kube::HttpOptions http;
  http.qps = 0;
  kube::Client client(kube::load_kubeconfig(need(opt, "kubeconfig")), http);
  const json figures = live::run(client, in, s);
  std::cout << figures.dump(2) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string cmd = argc > 1 ? argv[1] : "";
    sim::Options opt = parse(argc, argv);
    if (cmd == "slice") return slice(opt);
    if (cmd == "kueue-objects") return kueue_objects(opt);
    if (cmd == "policy") return policy(opt);
    if (cmd == "run") return run(opt);
    std::cerr << "usage: valley-live slice|kueue-objects|policy|run ... (see bench/live/main.cc)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "valley-live: " << e.what() << "\n";
    return 1;
  }
}
