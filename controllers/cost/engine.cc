#include "controllers/cost/engine.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <set>
#include <sstream>

#include "controllers/gpu/resources.h"
#include "controllers/gpu/pod_requests.h"
#include "operator/kube/json_fields.h"

namespace valley::cost {
namespace {

using json = nlohmann::json;
__extension__ typedef __int128 i128;

int64_t ms_between(SystemTime a, SystemTime b) { return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count(); }

int64_t rounded(i128 num, i128 den) { return static_cast<int64_t>((num + den / 2) / den); }

const json& obj(const json& o, const char* key) { return kube::object_at(o, key); }
// status.cost is not declared in the CRD (it is Valley's free-form ledger): every read tolerates a
// field that is absent, null or of another type.
int64_t i64(const json& o, const char* key, int64_t fallback = 0) { return kube::int_at(o, key).value_or(fallback); }

}  // namespace

void Charge::subtract(const Charge& o) {
  gpu -= o.gpu;
  energy -= o.energy;
  for (const auto& [k, v] : o.gpu_milli_seconds) gpu_milli_seconds[k] -= v;
  for (const auto& [k, v] : o.micro_wh) micro_wh[k] -= v;
}

void Charge::add(const Charge& o) {
  gpu += o.gpu;
  energy += o.energy;
  for (const auto& [k, v] : o.gpu_milli_seconds) gpu_milli_seconds[k] += v;
  for (const auto& [k, v] : o.micro_wh) micro_wh[k] += v;
}

Charge charge_interval(const Policy& p, const NodeRate& rate, int64_t share_milli, SystemTime from, SystemTime to) {
  Charge c;
  if (to <= from || share_milli <= 0) return c;
  i128 gpu_num = 0, energy_num = 0;
  const std::string key = rate.vendor + "/" + rate.capacity_class;
  for (SystemTime t = from; t < to;) {
    SystemTime b = std::min(next_tariff_boundary(p, t), to);
    const int64_t ms = ms_between(t, b);
    const Tariff tariff = tariff_at(p, t);
    gpu_num += i128{rate.gpu_per_hour} * share_milli * ms;  // / (1000 x 3.6e6) -> micros
    // micro-Wh = W x ms x share_milli x pue_milli / 3.6e6; micros = micro-Wh x per_kWh / 1e9.
    i128 uwh_num = i128{rate.watts} * ms * share_milli * p.pue_milli;
    c.micro_wh[tariff.name] += rounded(uwh_num, i128{3'600'000});
    energy_num += uwh_num * tariff.per_kwh;
    c.gpu_milli_seconds[key] += rounded(i128{share_milli} * ms, 1000);
    t = b;
  }
  c.gpu = rounded(gpu_num, i128{3'600'000'000LL});
  c.energy = rounded(energy_num, i128{3'600'000} * 1'000'000'000LL);
  return c;
}

Micros apply_multiplier(Micros amount, int64_t multiplier_milli) { return rounded(i128{amount} * multiplier_milli, 1000); }

PodUse pod_use(const api::Pod& pod) {
  PodUse u;
  u.uid = pod.uid;
  u.name = pod.name;
  u.node = pod.node_name;
  for (const auto& [resource, count] : gpu::gpu_requests(pod)) u.share_milli += gpu::share_milli(resource, count);
  bool all_terminated = true, any = false, ran_unstamped = false;
  std::optional<SystemTime> last_end;
  for (const auto& cs : pod.container_statuses) {
    any = true;
    std::optional<SystemTime> started;
    if (cs.running) {
      started = cs.running_since;
      all_terminated = false;
    } else if (cs.terminated) {
      started = cs.started;
      if (!started) ran_unstamped = true;
      if (cs.finished && (!last_end || *cs.finished > *last_end)) last_end = cs.finished;
    } else {
      all_terminated = false;
    }
    if (started && (!u.start || *started < *u.start)) u.start = started;
    // A restarted container's running.startedAt is its latest start; the pod has held its GPUs
    // since the first, which lastState still shows.
    if (const auto& before = cs.last_terminated_started; before && (!u.start || *before < *u.start)) u.start = before;
  }
  // Some runtimes (and kwok) leave terminated.startedAt empty: the pod's own start time stands in.
  // Only for a container that ran: one still waiting (its image pulling, its sandbox starting)
  // has not started, and charging it from startTime would make the charge depend on whether a
  // reconcile happened to see it waiting (a real node's e2e test found 1 GPU-second of 22 extra).
  if (!u.start && ran_unstamped) u.start = pod.start_time;
  if (any && all_terminated) u.end = last_end ? last_end : u.start;
  return u;
}

bool charged_to_end(const PodUse& pod, const json& cost_status) {
  if (!pod.start || pod.share_milli <= 0) return true;
  if (!pod.end) return false;
  for (const auto& e : kube::array_at(cost_status, "ledger"))
    if (kube::string_at(e, "uid") == pod.uid)
      return i64(e, "untilMs") >= std::chrono::duration_cast<std::chrono::milliseconds>(pod.end->time_since_epoch()).count();
  return false;
}

std::chrono::seconds accrual_interval(std::chrono::seconds base, size_t accruing_tasks, double writes_per_second) {
  if (writes_per_second <= 0) return base;
  const auto spread = static_cast<int64_t>(std::ceil(static_cast<double>(accruing_tasks) / writes_per_second));
  return std::max(base, std::chrono::seconds(spread));
}

Micros accrued_micros(const json& cost_status) {
  return i64(cost_status, "accruedMicros");
}

namespace {
constexpr std::chrono::seconds kClockSlack{5};

// Whether the ledger holds an entry for the pod: it holds GPUs, has started (or was charged
// before), and has an entry already or a node rate to open one with.
bool ledgered(const PodUse& pod, bool in_ledger, const std::map<std::string, NodeRate>& rates) {
  if (pod.share_milli <= 0 || (!pod.start && !in_ledger)) return false;
  return in_ledger || rates.count(pod.node) > 0;
}
}  // namespace

size_t ledger_entries(const json& cost_status, const std::vector<PodUse>& pods, const std::map<std::string, NodeRate>& rates) {
  std::set<std::string> charged;
  for (const auto& e : kube::array_at(cost_status, "ledger"))
    if (e.is_object()) charged.insert(kube::string_at(e, "uid"));
  return static_cast<size_t>(std::count_if(pods.begin(), pods.end(), [&](const PodUse& pod) { return ledgered(pod, charged.count(pod.uid) > 0, rates); }));
}

json accrue(const Policy& p, const json& cost_status, const std::vector<PodUse>& pods, const std::map<std::string, NodeRate>& rates,
            int priority, SystemTime now, bool finished, std::chrono::seconds settle) {
  // How far a running pod is certainly charged: whole seconds, `settle` back.
  const SystemTime running_until = std::chrono::floor<std::chrono::seconds>(now) - settle;
  json c = cost_status.is_object() ? cost_status : json::object();
  c["policy"] = p.name;
  c["currency"] = p.currency;
  const int64_t multiplier = multiplier_milli(p, priority);
  c["multiplier"] = format_milli(multiplier);
  c["priority"] = priority;
  json b = c.contains("breakdown") && c["breakdown"].is_object() ? c["breakdown"] : json::object();
  Charge total;
  total.gpu = i64(b, "gpuMicros");
  total.energy = i64(b, "energyMicros");
  for (const auto& [k, v] : obj(b, "gpuMilliSeconds").items()) total.gpu_milli_seconds[k] = i64(obj(b, "gpuMilliSeconds"), k.c_str());
  for (const auto& [k, v] : obj(b, "microWh").items()) total.micro_wh[k] = i64(obj(b, "microWh"), k.c_str());

  std::map<std::string, json> ledger;
  if (c.contains("ledger") && c["ledger"].is_array())
    for (const auto& e : c["ledger"])
      if (e.is_object()) ledger[kube::string_at(e, "uid")] = e;
  json next_ledger = json::array();
  for (const auto& pod_in : pods) {
    auto it = ledger.find(pod_in.uid);
    // Not one that never ran, holds no GPU, or whose node went before it could be priced.
    if (!ledgered(pod_in, it != ledger.end(), rates)) continue;
    PodUse pod = pod_in;
    if (!pod.start) pod.start = SystemTime(std::chrono::milliseconds(i64(it->second, "untilMs")));
    json entry;
    if (it != ledger.end()) {
      entry = it->second;
    } else {
      auto r = rates.find(pod.node);
      entry = {{"uid", pod.uid}, {"pod", pod.name}, {"node", pod.node}, {"vendor", r->second.vendor},
               {"product", r->second.product}, {"capacityClass", r->second.capacity_class},
               {"gpuPerHourMicros", r->second.gpu_per_hour}, {"watts", r->second.watts}, {"shareMilli", pod.share_milli},
               {"until", kube::format_time(*pod.start)}, {"untilMs", std::chrono::duration_cast<std::chrono::milliseconds>(pod.start->time_since_epoch()).count()}};
    }
    NodeRate rate{kube::string_at(entry, "vendor"), kube::string_at(entry, "product"),
                  kube::string_at(entry, "capacityClass", "on-demand"), i64(entry, "gpuPerHourMicros"),
                  static_cast<int>(std::clamp<int64_t>(i64(entry, "watts"), 0, 100'000))};
    SystemTime until{std::chrono::milliseconds(i64(entry, "untilMs"))};
    // An end is the cluster's word, and `now` (the API server's time as last seen) may trail it by
    // a second; an end further ahead than kClockSlack is a node clock running fast, believed only that far.
    SystemTime end = pod.end ? std::min(*pod.end, now + kClockSlack) : running_until;
    // Charged up to `until` already; the pod has held its GPUs since, even if its start moved
    // later (a container restarted, a status rewritten): charging from that new start would drop
    // the time in between.
    const SystemTime from = until;
    const int64_t share = i64(entry, "shareMilli", pod.share_milli);
    auto set_until = [&](SystemTime t) {
      entry["until"] = kube::format_time(t);
      entry["untilMs"] = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    };
    if (end > from) {
      total.add(charge_interval(p, rate, share, from, end));
      set_until(end);
    } else if (pod.end && *pod.end < until) {
      // Charged while it looked running, but it had ended earlier: give the difference back.
      Charge refund = charge_interval(p, rate, share, *pod.end, until);
      total.subtract(refund);
      set_until(*pod.end);
    }
    next_ledger.push_back(entry);
  }
  c["ledger"] = next_ledger;
  b["gpuMicros"] = total.gpu;
  b["energyMicros"] = total.energy;
  b["gpu"] = format_money(total.gpu);
  b["energy"] = format_money(total.energy);
  b["gpuMilliSeconds"] = total.gpu_milli_seconds;
  b["microWh"] = total.micro_wh;
  json hours = json::object(), kwh = json::object();
  for (const auto& [k, v] : total.gpu_milli_seconds) hours[k] = format_money(v * 1000 / 3600, 3);  // GPU-hours
  for (const auto& [k, v] : total.micro_wh) kwh[k] = format_money(v / 1000, 3);                  // kWh
  b["gpuHours"] = hours;
  b["kWh"] = kwh;
  c["breakdown"] = b;
  const Micros accrued = apply_multiplier(total.gpu + total.energy, multiplier);
  c["accruedMicros"] = accrued;
  c["accrued"] = format_money(accrued);
  c["summary"] = format_money(accrued) + " " + p.currency;  // the Cost printer column
  if (finished) {
    c["finalMicros"] = accrued;
    c["final"] = format_money(accrued);
  }
  return c;
}

std::optional<Estimate> estimate(const Policy& p, const api::TaskSpec& spec, const EstimateBasis& b) {
  if (!spec.estimated_duration) return std::nullopt;
  const bool single = spec.type == api::TaskType::Single;
  Estimate e;
  e.max_workers = single ? 1 : spec.max_workers;
  e.workers = std::clamp(single ? 1 : b.workers, 1, e.max_workers);
  e.start = b.start;
  const auto d = *spec.estimated_duration;
  const bool shared = b.shared && b.shared->placed;
  const double slowdown = shared ? 1.0 / std::clamp(b.shared->worst_rate, 0.01, 1.0) : 1.0;
  const double factor = (e.workers >= e.max_workers ? 1.0 : std::max(1.0, b.duration_factor)) * slowdown;
  e.duration = std::chrono::milliseconds(static_cast<int64_t>(std::llround(static_cast<double>(d.count()) * factor)));
  const int64_t share = int64_t{e.workers} * (shared ? b.shared->share_milli : spec.gpus.milli);
  const int64_t multiplier = multiplier_milli(p, b.priority >= 0 ? b.priority : spec.priority);
  auto priced = [&](const Charge& c) { return apply_multiplier(c.gpu + c.energy, multiplier); };
  e.gpu_milli_hours = rounded(i128{share} * e.duration.count(), 3'600'000);
  e.expected = priced(charge_interval(p, b.rate, share, e.start, e.start + e.duration));
  // The ends: the same pool for the whole run at one tariff, the cheapest or the dearest.
  Micros cheap = p.flat_per_kwh, dear = p.flat_per_kwh;
  for (const auto& w : p.windows) {
    cheap = std::min(cheap, w.per_kwh);
    dear = std::max(dear, w.per_kwh);
  }
  Policy flat = p;
  flat.windows.clear();
  flat.zone = TimeZone::utc();
  flat.flat_per_kwh = cheap;
  auto scaled = [](std::chrono::milliseconds t, double by) {
    return std::chrono::milliseconds(static_cast<int64_t>(std::llround(static_cast<double>(t.count()) * by)));
  };
  // Growth gains nothing: `workers` for d; on a shared GPU it may run alone, at full speed, for d.
  const auto low_duration = scaled(e.workers < e.max_workers || shared ? d : e.duration, b.spread.low);
  e.low = std::min(e.expected, priced(charge_interval(flat, b.rate, share, e.start, e.start + low_duration)));
  if (b.shared && !b.shared->placed)  // it may yet share a GPU there, alone
    e.low = std::min(e.low, priced(charge_interval(flat, b.rate, int64_t{e.workers} * b.shared->share_milli, e.start, e.start + low_duration)));
  flat.flat_per_kwh = dear;
  const int64_t max_share = int64_t{e.max_workers} * spec.gpus.milli;
  const bool linear_longer = max_share * d.count() > share * e.duration.count();
  const auto high_duration = scaled(linear_longer ? d : e.duration, b.spread.high);
  const NodeRate& high_rate = b.high_rate ? *b.high_rate : b.rate;
  e.high = std::max(e.expected, priced(charge_interval(flat, high_rate, linear_longer ? max_share : share, e.start, e.start + high_duration)));
  auto hours = [](std::chrono::milliseconds t) { return format_money(t.count() * 10 / 36, 2) + " h"; };
  e.basis = std::to_string(e.workers) + (e.workers == 1 ? " worker x " : " workers x ") + format_milli(share / e.workers) + " GPU x " +
            hours(e.duration) + " on " + b.rate.vendor + " " + b.rate.capacity_class + " at " + format_money(b.rate.gpu_per_hour) +
            "/GPU-h, priority x" + format_milli(multiplier) + (b.why.empty() ? "" : " (" + b.why + ")") +
            (shared ? "; a shared GPU, at " + format_milli(std::llround(1000 / slowdown)) + " of its speed alone beside the slowest partner it may get" : "");
  auto times = [](double by) {
    std::ostringstream o;
    o << std::fixed << std::setprecision(2) << by;
    return o.str();
  };
  const std::string spread = "; " + b.spread.source();
  e.low_basis = (e.workers < e.max_workers ? "growth gains nothing: " + std::to_string(e.workers) + " workers x " + hours(low_duration)
                                           : std::to_string(e.workers) + " x " + hours(low_duration)) +
                (b.shared ? " (alone on a shared GPU at full speed, charged its share)" : "") + " at the cheapest tariff, running " +
                times(b.spread.low) + "x the stated duration" + spread;
  e.high_basis = (linear_longer ? "grows to " + std::to_string(e.max_workers) + " workers at linear speedup: " + hours(high_duration)
                                : std::to_string(e.workers) + " x " + hours(high_duration)) +
                 (b.high_rate ? " on " + high_rate.vendor + " " + high_rate.capacity_class + " at " + format_money(high_rate.gpu_per_hour) +
                                    "/GPU-h (the dearest capacity it may be placed on)"
                              : std::string()) +
                 " at the dearest tariff, running " + times(b.spread.high) + "x the stated duration" + spread;
  return e;
}

json estimate_json(const Policy& p, const Estimate& e) {
  return {{"expected", format_money(e.expected)}, {"low", format_money(e.low)}, {"high", format_money(e.high)},
          {"expectedMicros", e.expected}, {"currency", p.currency}, {"gpuHours", format_money(e.gpu_milli_hours * 1000, 3)},
          {"start", kube::format_time(e.start)}, {"basis", e.basis}, {"lowAssumes", e.low_basis}, {"highAssumes", e.high_basis},
          {"workers", e.workers}, {"hours", format_money(e.duration.count() * 10 / 36, 2)}};
}

}  // namespace valley::cost
