#include "bench/sim/model.h"

#include <openssl/sha.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <sstream>

#include "controllers/api/money.h"
#include "operator/kube/timefmt.h"
#include "operator/yaml_json.h"

namespace valley::sim {

using json = nlohmann::json;

namespace {

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

// Calls row(cells, where, line_no) for each non-empty line of `csv` (a trailing CR dropped), the
// first one skipped when `is_header` says it is a header; `where` names the line in errors.
template <typename IsHeader, typename Row>
void for_each_row(const std::string& csv, const char* what, IsHeader is_header, Row row) {
  std::istringstream in(csv);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_no == 1 && is_header(line))) continue;
    row(split_csv(line), std::string(what) + " line " + std::to_string(line_no), line_no);
  }
}

int64_t to_int(const std::string& s, const std::string& where) {
  try {
    size_t used = 0;
    double v = std::stod(s, &used);
    if (used != s.size() && !(used + 1 == s.size() && s.back() == '\r')) throw std::invalid_argument(s);
    return static_cast<int64_t>(std::llround(v));
  } catch (const std::exception&) {
    throw InputError(where + ": not a number: \"" + s + "\"");
  }
}

json document(const std::string& yaml, const std::string& what) {
  std::string error;
  auto docs = parse_yaml(yaml, &error);
  if (!docs) throw InputError(what + ": " + error);
  if (docs->empty() || !(*docs)[0].value.is_object()) throw InputError(what + ": expected a mapping");
  return (*docs)[0].value;
}

// A field of a mapping, checked: the value if present and of the right kind, else `fallback`.
template <typename T>
T field(const json& obj, const std::string& key, T fallback, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    throw InputError(where + "." + key + ": unexpected value " + it->dump());
  }
}

const json& list(const json& obj, const std::string& key, const std::string& where) {
  static const json empty = json::array();
  auto it = obj.find(key);
  if (it == obj.end()) return empty;
  if (!it->is_array()) throw InputError(where + "." + key + ": expected a list");
  return *it;
}

}  // namespace

std::vector<TraceJob> parse_trace(const std::string& csv, int64_t from, int64_t to, int max_jobs) {
  std::vector<TraceJob> jobs;
  for_each_row(csv, "trace", [](const std::string& l) { return l.rfind("job_id", 0) == 0; },
               [&](const std::vector<std::string>& cells, const std::string& where, int) {
                 if (cells.size() < 4) throw InputError(where + ": expected job_id,submission_time,duration,num_gpu");
                 TraceJob j{cells[0], to_int(cells[1], where), to_int(cells[2], where), static_cast<int>(to_int(cells[3], where)), ""};
                 if (j.gpus < 1 || j.duration < 0) throw InputError(where + ": needs num_gpu >= 1 and duration >= 0");
                 jobs.push_back(std::move(j));
               });
  return slice_jobs(jobs, from, to, max_jobs);
}

bool is_philly(const std::string& csv) { return csv.rfind("timestamp,duration,num_gpus", 0) == 0; }

std::vector<TraceJob> parse_philly(const std::string& csv) {
  std::vector<TraceJob> jobs;
  std::optional<int64_t> earliest;
  for_each_row(csv, "trace", is_philly, [&](const std::vector<std::string>& cells, const std::string& where, int line_no) {
    if (cells.size() < 5) throw InputError(where + ": expected timestamp,duration,num_gpus,gpu_time,cluster");
    std::string stamp = cells[0];
    if (stamp.size() == 19 && stamp[10] == ' ') stamp[10] = 'T';
    auto t = kube::parse_time(stamp + "Z");
    if (!t) throw InputError(where + ": not a time \"" + cells[0] + "\" (YYYY-MM-DD hh:mm:ss)");
    TraceJob j{"philly-" + std::to_string(line_no), std::chrono::duration_cast<std::chrono::seconds>(t->time_since_epoch()).count(),
               to_int(cells[1], where), static_cast<int>(to_int(cells[2], where)), cells[4]};
    if (j.gpus < 1 || j.duration < 0) throw InputError(where + ": needs num_gpus >= 1 and duration >= 0");
    if (j.tenant.empty()) throw InputError(where + ": no cluster (the tenant)");
    earliest = std::min(earliest.value_or(j.submit), j.submit);
    jobs.push_back(std::move(j));
  });
  for (auto& j : jobs) j.submit -= earliest.value_or(0);
  std::stable_sort(jobs.begin(), jobs.end(), [](const TraceJob& a, const TraceJob& b) { return a.submit < b.submit; });
  return jobs;
}

std::vector<TraceJob> slice_jobs(const std::vector<TraceJob>& all, int64_t from, int64_t to, int max_jobs) {
  std::vector<TraceJob> jobs;
  for (const auto& j : all)
    if (j.submit >= from && j.submit < to) {
      jobs.push_back(j);
      jobs.back().submit -= from;
    }
  std::stable_sort(jobs.begin(), jobs.end(), [](const TraceJob& a, const TraceJob& b) { return a.submit < b.submit; });
  if (max_jobs > 0 && static_cast<int>(jobs.size()) > max_jobs) jobs.resize(static_cast<size_t>(max_jobs));
  return jobs;
}

std::vector<TraceJob> sample_to_load(const std::vector<TraceJob>& jobs, int64_t window, int gpus, double load, double* kept) {
  double demand = 0;  // GPU-seconds the jobs ask for inside the window
  for (const auto& j : jobs)
    if (j.submit < window) demand += static_cast<double>(j.gpus) * static_cast<double>(std::min(j.duration, window - j.submit));
  const double supply = static_cast<double>(gpus) * static_cast<double>(window);
  const double share = demand > 0 ? std::min(1.0, load * supply / demand) : 1.0;
  if (kept) *kept = share;
  std::vector<TraceJob> out;
  for (const auto& j : jobs)
    if (percentile_of(j.id, "sample") < share * 100) out.push_back(j);
  return out;
}

std::map<std::string, double> gpu_hours_by_tenant(const std::vector<TraceJob>& jobs) {
  std::map<std::string, double> out;
  for (const auto& j : jobs) out[j.tenant] += static_cast<double>(j.duration) * j.gpus / 3600.0;
  return out;
}

Cluster parse_cluster(const std::string& cluster_yaml, const std::string& spot_yaml) {
  Cluster c;
  json doc = document(cluster_yaml, "cluster");
  std::set<std::string> names;
  for (size_t i = 0; i < list(doc, "pools", "cluster").size(); ++i) {
    const json& p = doc["pools"][i];
    std::string where = "cluster.pools[" + std::to_string(i) + "]";
    if (!p.is_object()) throw InputError(where + ": expected a mapping");
    Pool pool;
    pool.name = field<std::string>(p, "name", "", where);
    pool.vendor = field<std::string>(p, "vendor", "nvidia", where);
    pool.product = field<std::string>(p, "product", "", where);
    std::string type = field<std::string>(p, "capacityType", "on-demand", where);
    pool.nodes = field<int>(p, "nodes", 1, where);
    pool.gpus_per_node = field<int>(p, "gpusPerNode", 8, where);
    pool.nodes_per_rack = field<int>(p, "nodesPerRack", 0, where);
    if (pool.nodes_per_rack < 0) throw InputError(where + ": nodesPerRack >= 0");
    pool.replicas = field<int>(p, "timeSlicedReplicas", 0, where);
    if (pool.replicas != 0 && (pool.replicas < 2 || pool.replicas > 16 || pool.vendor != "nvidia"))
      throw InputError(where + ".timeSlicedReplicas: 2..16 on an nvidia pool (0: whole GPUs)");
    if (pool.name.empty() || !names.insert(pool.name).second) throw InputError(where + ".name: missing or repeated");
    if (pool.vendor != "nvidia" && pool.vendor != "amd") throw InputError(where + ".vendor: nvidia or amd");
    if (type != "on-demand" && type != "spot") throw InputError(where + ".capacityType: on-demand or spot");
    if (pool.nodes < 0 || pool.gpus_per_node < 1) throw InputError(where + ": nodes >= 0 and gpusPerNode >= 1");
    pool.spot = type == "spot";
    pool.labels[pool.vendor == "amd" ? "amd.com/gpu.product-name" : "nvidia.com/gpu.product"] = pool.product;
    pool.labels["karpenter.sh/capacity-type"] = type;
    if (pool.replicas > 0) {  // as GPU feature discovery labels a time-sliced node
      pool.labels["nvidia.com/gpu.sharing-strategy"] = "time-slicing";
      pool.labels["nvidia.com/gpu.replicas"] = std::to_string(pool.replicas);
    }
    const json labels = field<json>(p, "labels", json::object(), where);
    for (auto it = labels.begin(); it != labels.end(); ++it)
      pool.labels[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
    c.pools.push_back(std::move(pool));
  }
  if (c.pools.empty()) throw InputError("cluster.pools: at least one pool");
  if (spot_yaml.empty()) return c;
  json spot = document(spot_yaml, "spot");
  const json pools = field<json>(spot, "pools", json::object(), "spot");
  for (auto it = pools.begin(); it != pools.end(); ++it) {
    const std::string& name = it.key();
    const json& m = *it;
    std::string where = "spot.pools." + name;
    if (!names.count(name)) throw InputError(where + ": no such pool in the cluster");
    SpotModel s;
    s.interruptions_per_node_hour = field<double>(m, "interruptionsPerNodeHour", 0.0, where);
    s.notice_seconds = field<int64_t>(m, "noticeSeconds", 120, where);
    s.replacement_seconds = field<int64_t>(m, "replacementSeconds", 600, where);
    if (s.interruptions_per_node_hour < 0 || s.notice_seconds < 0 || s.replacement_seconds < 0)
      throw InputError(where + ": values must be >= 0");
    c.spot[name] = s;
  }
  return c;
}

CloudModel parse_cloud(const std::string& yaml, const Cluster& cluster) {
  json doc = document(yaml, "cloud");
  CloudModel m;
  m.consolidate_after_seconds = field<int64_t>(doc, "consolidateAfterSeconds", 30, "cloud");
  m.provisioning_seconds = field<int64_t>(doc, "provisioningSeconds", 300, "cloud");
  if (m.consolidate_after_seconds < 0 || m.provisioning_seconds < 0) throw InputError("cloud: values must be >= 0");
  const json pools = field<json>(doc, "pools", json::object(), "cloud");
  for (auto it = pools.begin(); it != pools.end(); ++it) {
    const std::string where = "cloud.pools." + it.key();
    if (!it->is_number_integer() || it->get<int64_t>() < 0) throw InputError(where + ": provisioning seconds, an integer >= 0");
    m.provisioning_by_pool[it.key()] = it->get<int64_t>();
  }
  for (const auto& [name, seconds] : m.provisioning_by_pool) {
    (void)seconds;
    if (std::none_of(cluster.pools.begin(), cluster.pools.end(), [&](const Pool& p) { return p.name == name; }))
      throw InputError("cloud.pools." + name + ": no such pool in the cluster");
  }
  for (const auto& p : cluster.pools)
    if (p.replicas > 0) throw InputError("cloud: pool " + p.name + " has time-sliced GPUs; the cloud mode buys whole-GPU nodes only");
  return m;
}

Workload parse_workload(const std::string& yaml) {
  json doc = document(yaml, "workload");
  Workload w;
  int total = 0;
  for (size_t i = 0; i < list(doc, "classes", "workload").size(); ++i) {
    const json& c = doc["classes"][i];
    std::string where = "workload.classes[" + std::to_string(i) + "]";
    PriorityClass pc{field<std::string>(c, "name", "", where), field<int>(c, "priority", 0, where),
                     field<bool>(c, "reduceCost", false, where), field<int>(c, "percent", 0, where)};
    if (pc.percent < 0) throw InputError(where + ".percent: must be >= 0");
    total += pc.percent;
    w.classes.push_back(pc);
  }
  if (w.classes.empty()) w.classes.push_back({"default", 0, false, 100});
  else if (total != 100) throw InputError("workload.classes: percents add up to " + std::to_string(total) + ", not 100");
  w.amd_percent = field<int>(doc, "amdPercent", 0, "workload");
  w.sharing_percent = field<int>(doc, "sharingPercent", 0, "workload");
  if (w.sharing_percent < 0 || w.sharing_percent > 100) throw InputError("workload.sharingPercent: 0..100");
  w.min_workers_percent = field<int>(doc, "minWorkersPercent", 50, "workload");
  w.checkpoint_every_seconds = field<int64_t>(doc, "checkpointEverySeconds", 1800, "workload");
  w.restart_seconds = field<int64_t>(doc, "restartSeconds", 60, "workload");
  w.tick_seconds = field<int64_t>(doc, "tickSeconds", 300, "workload");
  w.seed = field<uint64_t>(doc, "seed", 1, "workload");
  std::string start = field<std::string>(doc, "startTime", "2021-03-04T00:00:00Z", "workload");
  auto t = kube::parse_time(start);
  if (!t) throw InputError("workload.startTime: not an RFC 3339 time: " + start);
  w.start_epoch = std::chrono::duration_cast<std::chrono::seconds>(t->time_since_epoch()).count();
  for (const auto& a : list(doc, "apps", "workload")) w.apps.push_back(a.get<std::string>());
  if (w.amd_percent < 0 || w.amd_percent > 100) throw InputError("workload.amdPercent: 0..100");
  if (w.min_workers_percent < 1 || w.min_workers_percent > 100) throw InputError("workload.minWorkersPercent: 1..100");
  if (w.checkpoint_every_seconds < 1 || w.restart_seconds < 0 || w.tick_seconds < 1)
    throw InputError("workload: checkpointEverySeconds >= 1, restartSeconds >= 0, tickSeconds >= 1");
  return w;
}

Speedup Speedup::linear() {
  Speedup s;
  s.speedup_[1] = 1.0;
  return s;
}

Speedup Speedup::from_placements(const std::string& csv, const std::set<int>& drop) {
  struct Row {
    int gpus, nodes, bsz;
    double step;
  };
  std::vector<Row> rows;
  std::set<int> sizes;
  for_each_row(csv, "placements", [](const std::string&) { return true; },
               [&](const std::vector<std::string>& cells, const std::string& where, int) {
                 if (cells.size() < 3) throw InputError(where + ": expected placement,local_bsz,step_time");
                 int gpus = 0;
                 for (char ch : cells[0]) {
                   if (ch < '0' || ch > '9') throw InputError(where + ": placement is digits");
                   gpus += ch - '0';
                 }
                 double step = 0;
                 try {
                   step = std::stod(cells[2]);
                 } catch (const std::exception&) {
                   throw InputError(where + ": step_time is not a number");
                 }
                 int bsz = static_cast<int>(to_int(cells[1], where));
                 rows.push_back({gpus, static_cast<int>(cells[0].size()), bsz, step});
                 sizes.insert(bsz);
               });
  if (rows.empty()) throw InputError("placements: no rows");
  Speedup s;
  // The median per-GPU batch size measured: neither the tiny batches that scale worst nor the
  // largest that scale best.
  std::vector<int> all(sizes.begin(), sizes.end());
  s.local_bsz_ = all[all.size() / 2];
  // Step time on n GPUs: the placement on the fewest nodes (then fastest) at that batch size.
  std::map<int, std::pair<int, double>> best;  // gpus -> (nodes, step)
  for (const auto& r : rows) {
    if (r.bsz != s.local_bsz_ || r.gpus < 1 || r.step <= 0 || (r.gpus > 1 && drop.count(r.gpus))) continue;
    auto it = best.find(r.gpus);
    if (it == best.end() || r.nodes < it->second.first || (r.nodes == it->second.first && r.step < it->second.second))
      best[r.gpus] = {r.nodes, r.step};
  }
  if (!best.count(1)) throw InputError("placements: no single-GPU measurement at batch size " + std::to_string(s.local_bsz_));
  // Placements wider than the fewest nodes (Pollux's nodes hold 4 GPUs), size by size.
  std::map<int, std::map<int, double>> fastest;  // gpus -> nodes -> best step
  for (const auto& r : rows) {
    if (r.bsz != s.local_bsz_ || r.gpus < 2 || r.step <= 0) continue;
    auto& step = fastest[r.gpus][r.nodes];
    step = step > 0 ? std::min(step, r.step) : r.step;
  }
  std::map<int, std::pair<double, int>> ratios;  // extra nodes -> (sum of factors, sizes)
  for (const auto& [gpus, by_nodes] : fastest) {
    const auto& [fewest, step] = *by_nodes.begin();
    for (const auto& [nodes, wider] : by_nodes)
      if (nodes > fewest) {
        ratios[nodes - fewest].first += step / wider;
        ++ratios[nodes - fewest].second;
      }
  }
  double last = 1;
  for (const auto& [extra, sum] : ratios) {
    last = std::min(last, sum.first / sum.second);  // wider is never faster
    s.spread_[extra] = last;
  }
  double one = best[1].second;
  double previous = 0;
  for (const auto& [gpus, m] : best) {
    // More GPUs never make it slower: a scheduler would leave the extra ones idle.
    double v = std::max(previous, gpus * one / m.second);
    s.speedup_[gpus] = v;
    previous = v;
  }
  return s;
}

double Speedup::spread(int extra) const {
  if (extra <= 0 || spread_.empty()) return 1;
  if (auto it = spread_.find(extra); it != spread_.end()) return it->second;
  // A gap in what was measured: the next wider measurement. Past the widest: the widest's, since
  // once the gang's traffic crosses the network a ring all-reduce's time no longer grows with nodes.
  auto it = spread_.lower_bound(extra);
  return it == spread_.end() ? std::prev(spread_.end())->second : it->second;
}

double Speedup::at(int gpus) const {
  if (gpus <= 0) return 0;
  auto hi = speedup_.lower_bound(gpus);
  if (hi != speedup_.end() && hi->first == gpus) return hi->second;
  if (hi == speedup_.end()) {  // past the largest measured size: keep its efficiency
    auto last = std::prev(speedup_.end());
    return last->second / last->first * gpus;
  }
  if (hi == speedup_.begin()) return hi->second * gpus / hi->first;
  auto lo = std::prev(hi);
  double f = static_cast<double>(gpus - lo->first) / (hi->first - lo->first);
  return lo->second + f * (hi->second - lo->second);
}

std::vector<cost::Policy::SharingPair> parse_pair_rates(const std::string& csv) {
  std::vector<cost::Policy::SharingPair> out;
  for_each_row(
      csv, "pair rates", [](const std::string& line) { return line.rfind("profile,", 0) == 0; },
      [&](const std::vector<std::string>& cells, const std::string& where, int) {
        if (cells.size() != 4 || cells[0].empty() || cells[1].empty()) throw InputError(where + ": expected profile,other,rate,other_rate");
        auto milli = [&](const std::string& text) {
          const auto m = api::parse_milli(text);
          if (!m || *m < 0 || *m > 2000) throw InputError(where + ": a rate from 0 to 2 with up to 3 decimals, not \"" + text + "\"");
          return *m;
        };
        out.push_back({cells[0], cells[1], milli(cells[2]), milli(cells[3])});
      });
  return out;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  size_t k = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, k == 0 ? 0 : k - 1)];
}

int percentile_of(const std::string& id, const std::string& salt) {
  std::string text = salt + "/" + id;
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  uint32_t v = (uint32_t{digest[0]} << 24) | (uint32_t{digest[1]} << 16) | (uint32_t{digest[2]} << 8) | digest[3];
  return static_cast<int>(v % 100);
}

}  // namespace valley::sim
