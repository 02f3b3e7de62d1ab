#!/usr/bin/env bash
# Tenants on a shared cluster (#18): slices of the Philly-derived job list of the Pollux artifact,
# whose 15 virtual clusters are the tenants (quotas and fair-share weights in proportion to each
# one's GPU-hours over the whole trace), replayed by Valley without tenants, with Valley's tenants
# (borrowing and lending, reclaim by shrinking first) and with strict quotas (no borrowing), on the
# 256-GPU cluster of bench/sim/inputs. Each slice is sampled (by a hash of the job id) to a GPU demand
# of 1.2x the cluster in the slice (--load): Philly ran on a far larger cluster.
# The slices are 48 hours spread over the trace's busy months (weeks 4, 6 and 9), fixed before any
# result was seen.
#   bench/sim/tenants.sh [OUT] [valley-sim args...]     OUT defaults to bench/results/tenants
# Then Valley with Tenants again, every tenant's fair-share weight the same (--fair-share-weights
# equal), for the scheduler's KPIs by knob (#73): the weight, and reclaim (borrowing against strict).
# (about an hour of one core: 48 min here at d3d7b09 with two replays at a time; TENANTS_REPORT_ONLY=1 only rewrites OUT/tenants.md from the runs there)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-bench/results/tenants}
shift || true
mkdir -p "$out" bench/out
gzip -dc bench/data/pollux-adaptdl/philly.csv.gz > bench/out/philly.csv  # kept compressed in the repository (3.4 MB as text)
replay() {  # FROM OUT-DIR valley-sim args...: Valley over the 48 hours from hour FROM
  local from=$1 dir=$2
  shift 2
  build/bin/valley-sim --label "philly-$from" --trace bench/out/philly.csv --from-hour "$from" --to-hour "$((from + 48))" --load 1.2 \
    --cluster bench/sim/inputs/cluster.yaml --spot bench/sim/inputs/spot.yaml --pricing deploy/samples/pricingpolicy-default.yaml \
    --workload bench/sim/inputs/workload.yaml --profiles bench/data/pollux-adaptdl --policy valley --no-bound --out "$dir" "$@" >/dev/null
}
[ -n "${TENANTS_REPORT_ONLY:-}" ] || for from in 720 1104 1536; do
  replay "$from" "$out/philly-$from" --tenancy none,borrowing,strict "$@"
  # The fair-share weight as a knob: every tenant's the same, the quotas as before.
  replay "$from" "$out/philly-$from-equal-weights" --tenancy borrowing --fair-share-weights equal "$@"
done
python3 - "$out" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
rows = ["| slice (jobs, sampled) | tenancy | Jain's index (hours measured) | lowest held / fair share while backlogged | tenants below 0.8 | owner claims | claim wait p50 / p95 / max (s) | GPU allocation in the slice | cost (USD) | mean JCT (h) | preemptions |",
        "| --- | --- | ---: | --- | --- | ---: | --- | ---: | ---: | ---: | ---: |"]
# The scheduler's KPIs (#73) by tenancy and fair-share weights: what the knobs move.
kpis = ["| slice | tenancy | fair-share weights | starved, not by choice | priority inversions, GPU-hours | longest wait (h) | Jain over users | cost (USD) | mean JCT (h) |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
detail = []
for d in sorted(p for p in out.iterdir() if p.is_dir() and (p / "sim.json").exists()):
    s = json.loads((d / "sim.json").read_text())
    for p in s["policies"]:
        c = p["nominalClaims"]
        jain = f"{p['jainIndex']:.3f} ({p['jainHours']})" if p["jainHours"] > 0 else "n/a (never backlogged with another tenant active)"
        # Each backlogged tenant's mean share held against its mean fair share over its backlogged hours.
        ratios = {n: t["shareWhenBacklogged"] / t["fairShareWhenBacklogged"] for n, t in p["tenants"].items()
                  if t["backloggedHours"] > 0 and t["fairShareWhenBacklogged"] > 0}
        low = min(ratios.items(), key=lambda kv: kv[1]) if ratios else None
        lowest = f"{low[1]:.2f} ({low[0]}, {p['tenants'][low[0]]['backloggedHours']} h)" if low else "n/a"
        below = ", ".join(f"{n} {r:.2f}" for n, r in sorted(ratios.items(), key=lambda kv: kv[1]) if r < 0.8) or "none"
        weights = s.get("fairShareWeights", "entitled")
        k = p["kpis"]
        kpis.append(f"| {s['label']} | {p['policy']} | {weights} | {k['starvation']['starvedNotByChoice']} | {k['priorityInversions']['gpuHours']} | "
                    f"{k['starvation']['longestWaitHours']} | {k['fairness']['jainOverUsers']} | {p['totalCost']} | {p['meanJctHours']} |")
        rows.append(f"| {d.name} ({s['slice']['jobs']}, {s['slice']['sampled']:.0%}) | {p['policy']} | {jain} | {lowest} | {below} | {c['count']} | "
                    f"{c['waitP50Seconds']:.0f} / {c['waitP95Seconds']:.0f} / {c['waitMaxSeconds']:.0f} | {p['windowAllocationPercent']}% | {p['totalCost']} | "
                    f"{p['meanJctHours']} | {p['preemptions']} |")
        detail.append(f"\n{d.name}, {p['policy']}: tenant weight / nominal GPUs / GPU-hours held / hours backlogged / share held while backlogged vs its fair share (ratio)")
        for name, t in sorted(p["tenants"].items(), key=lambda kv: -kv[1]["weight"]):
            if t["backloggedHours"] > 0:
                detail.append(f"  {name}: {t['weight']:.3f} / {t['nominalGpus']} / {t['gpuHours']} / {t['backloggedHours']} / {t['shareWhenBacklogged']:.3f} vs {t['fairShareWhenBacklogged']:.3f} ({t['shareWhenBacklogged'] / t['fairShareWhenBacklogged'] if t['fairShareWhenBacklogged'] else 0:.2f})")
(out / "tenants.md").write_text("\n".join(rows) + "\n\n" + "\n".join(kpis) + "\n" + "\n".join(detail) + "\n")
print("\n".join(rows) + "\n\n" + "\n".join(kpis))
PY
echo "tenants: wrote $out/<slice>/sim.json and $out/tenants.md" >&2
