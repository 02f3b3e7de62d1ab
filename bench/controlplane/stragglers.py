#!/usr/bin/env python3
"""stragglers.py PODS_JSON [TASKS_JSON]: from `kubectl get pods -o json` (and `kubectl get
trainingtasks -o json`) saved to files, prints the pods that are not Running and Ready and the
TrainingTasks that are not Running, with what each says about itself. bench/controlplane/run.sh
calls it when a run times out."""
import json
import sys

pods = json.load(open(sys.argv[1])).get("items", [])
tasks = json.load(open(sys.argv[2])).get("items", []) if len(sys.argv) > 2 else []


def ready(pod):
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in pod.get("status", {}).get("conditions", []))


bad = [p for p in pods if p.get("status", {}).get("phase") != "Running" or not ready(p)]
print(f"pods: {len(pods)}, not Running and Ready: {len(bad)}")
for p in bad:
    st = p.get("status", {})
    conds = ", ".join(f'{c.get("type")}={c.get("status")}{"(" + c["reason"] + ")" if c.get("reason") else ""}'
                      for c in st.get("conditions", []))
    print(f'  pod {p["metadata"]["name"]}: phase {st.get("phase")}, node {p["spec"].get("nodeName", "-")}, '
          f'deleting {"deletionTimestamp" in p["metadata"]}, rv {p["metadata"].get("resourceVersion")}; {conds}')
stuck = [t for t in tasks if t.get("status", {}).get("phase") != "Running"]
if tasks:
    print(f"tasks: {len(tasks)}, not Running: {len(stuck)}")
for t in stuck:
    st = t.get("status", {})
    print(f'  task {t["metadata"]["name"]}: phase {st.get("phase")} ({st.get("reason", "")}: {st.get("message", "")}), '
          f'epoch {st.get("epoch")}, replicas {st.get("replicas")}, readyReplicas {st.get("readyReplicas")}')
    for c in st.get("conditions", []):
        print(f'    {c.get("type")}={c.get("status")} {c.get("reason", "")}: {c.get("message", "")}')
    mine = [p for p in pods if any(r.get("uid") == t["metadata"]["uid"] for r in p["metadata"].get("ownerReferences", []))]
    for p in sorted(mine, key=lambda p: p["metadata"]["name"]):
        print(f'    pod {p["metadata"]["name"]}: {p.get("status", {}).get("phase")}, ready {ready(p)}, '
              f'node {p["spec"].get("nodeName", "-")}, rv {p["metadata"].get("resourceVersion")}')
