#!/usr/bin/env python3
"""Writes the bad-input catalogue (tests/bad-inputs/<family>/<case>.yaml) from the tables below.

Each case is one file: a comment header with what it is and what must happen, then the input.
  # <what it is>
  # expect: rejected            the API server refuses it; `message` is part of its answer
  # expect: phase=<Phase>       Valley takes it and the task reaches <Phase>; `message` is part of status.message
  # expect: event=<Reason>      Valley takes it and records an Event <Reason> whose note holds `message`
  # message: <text>
The families:
  tasks/        TrainingTasks, created in the runner's namespace
  policies/     PricingPolicies, created under the name the runner's operator reads
  checkpoints/  the text of a checkpointing task's latest.json, written to its S3 store
  pods/         a merge patch of a running task's worker pod status (what a kubelet could report)
  stores/       a checkpoint store that fails: the task's spec.checkpoint and the Secret it names, with
                ${S3} for the runner's real S3 endpoint (versitygw), ${SLOW_S3} for the same behind
                a proxy adding 3 s to every exchange, ${ACCESS}/${SECRET} for its credentials
tests/e2e/bad_inputs_test.cc runs them all against the real API server with one operator, beside a
healthy task that must finish untouched. Run this script after changing the tables; commit its output.
"""
import json, os, shutil

HERE = os.path.dirname(os.path.abspath(__file__))

def task(spec_patch=None, name=None, drop=(), metadata=None):
    spec = {"taskType": "MPI", "replicas": {"min": 1, "max": 1},
            "master": {"image": "valley.dev/examples/launcher:1"},
            "worker": {"image": "valley.dev/examples/worker:1", "gpus": "1"}}
    for path in drop:
        node = spec
        keys = path.split(".")
        for k in keys[:-1]:
            node = node[k]
        node.pop(keys[-1], None)
    def merge(a, b):
        for k, v in b.items():
            if isinstance(v, dict) and isinstance(a.get(k), dict):
                merge(a[k], v)
            else:
                a[k] = v
    merge(spec, spec_patch or {})
    meta = {"name": name or "case"}
    meta.update(metadata or {})
    return {"apiVersion": "valley.dev/v1beta1", "kind": "TrainingTask", "metadata": meta, "spec": spec}

def pytorch(spec_patch=None, **kw):
    return task(dict({"taskType": "PyTorch", "worker": {"image": "valley.dev/examples/pytorch:1", "gpus": "1",
                                                       "command": ["python3", "/opt/train.py"]}}, **(spec_patch or {})),
                drop=("master",), **kw)

def single(spec_patch=None, **kw):
    return task(dict({"taskType": "Single", "replicas": {"min": 1, "max": 1}, "image": "valley.dev/examples/notebook:1"}, **(spec_patch or {})),
                drop=("master",), **kw)

R = "rejected"
TASKS = [
    # (file, description, expect, message, object)
    ("priority-negative", "priority below 0", R, "spec.priority", task({"priority": -1})),
    ("priority-101", "priority above 100", R, "spec.priority", task({"priority": 101})),
    ("priority-huge", "priority beyond any integer Valley uses", R, "spec.priority", task({"priority": 10**15})),
    ("priority-string", "priority as text", R, "spec.priority", task({"priority": "high"})),
    ("priority-fraction", "priority with a fraction", R, "spec.priority", task({"priority": 1.5})),
    ("priority-bool", "priority as a boolean", R, "spec.priority", task({"priority": True})),
    ("min-zero", "replicas.min 0", R, "spec.replicas.min", task({"replicas": {"min": 0, "max": 2}})),
    ("min-negative", "replicas.min negative", R, "spec.replicas.min", task({"replicas": {"min": -5, "max": 2}})),
    ("min-huge", "replicas.min above 10000", R, "spec.replicas.min", task({"replicas": {"min": 10001, "max": 10001}})),
    ("min-string", "replicas.min as text", R, "spec.replicas.min", task({"replicas": {"min": "two", "max": 2}})),
    ("min-fraction", "replicas.min with a fraction", R, "spec.replicas.min", task({"replicas": {"min": 2.5, "max": 4}})),
    ("max-zero", "replicas.max 0", R, "spec.replicas.max", task({"replicas": {"min": 1, "max": 0}})),
    ("max-huge", "replicas.max above 10000", R, "spec.replicas.max", task({"replicas": {"min": 1, "max": 10001}})),
    ("max-absurd", "replicas.max of 10^11", R, "spec.replicas.max", task({"replicas": {"min": 1, "max": 99999999999}})),
    ("min-above-max", "replicas.min above replicas.max", R, "replicas.min must not exceed replicas.max", task({"replicas": {"min": 5, "max": 2}})),
    ("target-above-max", "replicas.target above max", R, "replicas.target (kubectl scale) must lie within", task({"replicas": {"min": 1, "max": 4, "target": 5}})),
    ("target-below-min", "replicas.target below min", R, "replicas.target (kubectl scale) must lie within", task({"replicas": {"min": 2, "max": 4, "target": 1}})),
    ("target-zero", "replicas.target 0", R, "spec.replicas.target", task({"replicas": {"min": 1, "max": 4, "target": 0}})),
    ("replicas-string", "replicas as text", R, "spec.replicas", task({"replicas": "3"})),
    ("replicas-list", "replicas as a list", R, "spec.replicas", task({"replicas": [1, 2]})),
    ("type-unknown", "an unknown task type", R, "spec.taskType", task({"taskType": "Horovod"})),
    ("type-lowercase", "task type in the wrong case", R, "spec.taskType", task({"taskType": "mpi"})),
    ("type-empty", "an empty task type", R, "spec.taskType", task({"taskType": ""})),
    ("type-number", "task type as a number", R, "spec.taskType", task({"taskType": 7})),
    ("elasticity-unknown", "an unknown elasticity", R, "spec.elasticity", task({"elasticity": "Live"})),
    ("elasticity-empty", "an empty elasticity", R, "spec.elasticity", task({"elasticity": ""})),
    ("amd-string", "amdSupport as text", R, "spec.amdSupport", task({"amdSupport": "yes"})),
    ("reducecost-number", "reduceCost as a number", R, "spec.reduceCost", task({"reduceCost": 1})),
]
for v in ["0", "-1", "1.5", "1000", "0.0001", "abc", "0.", ".5", "1e3", " 1", "8 ", "NaN", "0x10", "", "00", "01", "1/2", "½",
          "0.0", "0.000"]:
    safe = {"": "empty", " 1": "leading-space", "8 ": "trailing-space", "½": "unicode-half", "1/2": "slash", ".5": "dot5", "0.": "zero-dot"}.get(v, v.replace(".", "p").replace("-", "minus"))
    TASKS.append((f"gpus-{safe}", f"worker.gpus {json.dumps(v)}", R, "spec.worker.gpus", task({"worker": {"gpus": v}})))
TASKS += [
    ("gpus-integer", "worker.gpus as a number, not a string", R, "spec.worker.gpus", task({"worker": {"gpus": 8}})),
    ("slots-zero", "slotsPerWorker 0", R, "spec.worker.slotsPerWorker", task({"worker": {"slotsPerWorker": 0}})),
    ("slots-huge", "slotsPerWorker above 1024", R, "spec.worker.slotsPerWorker", task({"worker": {"slotsPerWorker": 1025}})),
    ("slots-negative", "slotsPerWorker negative", R, "spec.worker.slotsPerWorker", task({"worker": {"slotsPerWorker": -1}})),
    ("slots-string", "slotsPerWorker as text", R, "spec.worker.slotsPerWorker", task({"worker": {"slotsPerWorker": "4"}})),
    ("master-replicas-2", "two launchers", R, "spec.master.replicas", task({"master": {"replicas": 2}})),
    ("mpi-no-master", "an MPI task without a launcher", R, "an MPI task needs master.image and worker.image", task(drop=("master",))),
    ("mpi-no-worker-image", "an MPI task without a worker image", R, "an MPI task needs master.image and worker.image", task(drop=("worker.image",))),
    ("mpi-empty-image", "an empty launcher image", R, "spec.master.image", task({"master": {"image": ""}})),
    ("single-no-image", "a Single task without an image", R, "a Single task needs image", single(drop=()) if False else task({"taskType": "Single", "replicas": {"min": 1, "max": 1}}, drop=("master", "worker.image"))),
    ("pytorch-with-master", "a PyTorch task with a launcher", R, "a PyTorch task runs torchrun on its workers (no master)",
     pytorch({"master": {"image": "valley.dev/examples/launcher:1"}})),
    ("pytorch-no-command", "a PyTorch task without the command torchrun runs", R, "it needs worker.image and worker.command",
     task({"taskType": "PyTorch"}, drop=("master",))),
    ("pytorch-command-string", "a PyTorch command as text, not a list", R, "spec.worker.command",
     pytorch({"worker": {"image": "valley.dev/examples/pytorch:1", "command": "torchrun train.py"}})),
    ("single-two-pods", "a Single task asking for two pods", R, "a Single task runs one pod", single({"replicas": {"min": 1, "max": 2}})),
    ("amdimage-without-amd", "an AMD image on a task that does not run on AMD", R, "worker.amdImage is only used with amdSupport true", task({"worker": {"amdImage": "valley.dev/examples/worker-rocm:1"}})),
    ("vendor-unknown", "a vendor Valley does not place", R, "spec.vendors", task({"vendors": ["tpu"]})),
    ("vendors-empty", "an empty vendor list", R, "spec.vendors", task({"vendors": []})),
    ("vendorimage-unlisted", "an Intel image on a task that does not list intel", R, "worker.vendorImages names a vendor", task({"worker": {"vendorImages": {"intel": "valley.dev/examples/worker-xpu:1"}}})),
    ("topology-both", "a topology both required and preferred", R, "spec.topology takes exactly one", task({"topology": {"required": "rack", "preferred": "zone"}})),
    ("topology-neither", "a topology with no level", R, "spec.topology takes exactly one", task({"topology": {}})),
    ("image-number", "an image as a number", R, "spec.worker.image", task({"worker": {"image": 42}})),
    ("command-string", "command as text, not a list", R, "spec.master.command", task({"master": {"command": "mpirun train.py"}})),
    ("args-numbers", "args as numbers", R, "spec.master.args", task({"master": {"args": [1, 2]}})),
    ("resources-string", "worker.resources as text", R, "spec.worker.resources", task({"worker": {"resources": "big"}})),
    ("template-string", "worker.template as text", R, "spec.worker.template", task({"worker": {"template": "x"}})),
    ("checkpoint-no-uri", "a checkpoint without a URI", R, "spec.checkpoint.uri", task({"checkpoint": {"gracePeriodSeconds": 30}})),
    ("checkpoint-http", "a checkpoint URI over http", R, "spec.checkpoint.uri", task({"checkpoint": {"uri": "http://bucket/path"}})),
    ("checkpoint-s3-no-bucket", "s3:// without a bucket", R, "spec.checkpoint.uri", task({"checkpoint": {"uri": "s3://"}})),
    ("checkpoint-file", "a file:// checkpoint", R, "spec.checkpoint.uri", task({"checkpoint": {"uri": "file:///tmp/ckpt"}})),
    ("checkpoint-one-slash", "s3:/ with one slash", R, "spec.checkpoint.uri", task({"checkpoint": {"uri": "s3:/bucket/p"}})),
    ("checkpoint-pvc-no-claim", "pvc:// without a claim", R, "spec.checkpoint.uri", task({"checkpoint": {"uri": "pvc://"}})),
    ("checkpoint-grace-negative", "a negative checkpoint window", R, "spec.checkpoint.gracePeriodSeconds", task({"checkpoint": {"uri": "s3://b/p", "gracePeriodSeconds": -1}})),
    ("checkpoint-grace-huge", "a checkpoint window above an hour", R, "spec.checkpoint.gracePeriodSeconds", task({"checkpoint": {"uri": "s3://b/p", "gracePeriodSeconds": 3601}})),
    ("checkpoint-secret-no-name", "a secretRef without a name", R, "spec.checkpoint.secretRef.name", task({"checkpoint": {"uri": "s3://b/p", "secretRef": {}}})),
    ("checkpoint-secret-empty-name", "a secretRef with an empty name", R, "spec.checkpoint.secretRef.name", task({"checkpoint": {"uri": "s3://b/p", "secretRef": {"name": ""}}})),
    ("checkpoint-string", "checkpoint as text", R, "spec.checkpoint", task({"checkpoint": "s3://b/p"})),
]
for v, safe in [("6 hours", "words"), ("-1h", "negative"), ("1y", "years"), ("", "empty"), ("h", "unit-only"), ("1.5.5h", "two-dots"), ("90", "no-unit"), ("1h 30m", "space")]:
    TASKS.append((f"duration-{safe}", f"estimatedDuration {json.dumps(v)}", R, "spec.estimatedDuration", task({"estimatedDuration": v})))
for v, safe in [("tomorrow", "word"), ("2026-13-45", "date-only"), ("2026-11-24 18:00:00", "no-t-no-zone"), ("x" * 65, "too-long"), ("-48h", "negative"), ("2026-11-24T18:00:00", "no-zone")]:
    TASKS.append((f"deadline-{safe}", f"deadline {json.dumps(v[:20])}", R, "spec.deadline", task({"deadline": v})))
for v, safe in [("-1", "negative"), ("1,000", "comma"), ("1.234", "three-decimals"), ("abc", "word"), ("1e9", "exponent"), ("9999999999", "ten-digits"), ("$5", "currency-sign"), ("", "empty"), (" 5", "leading-space")]:
    TASKS.append((f"maxcost-{safe}", f"maxCost {json.dumps(v)}", R, "spec.maxCost", task({"maxCost": v})))
TASKS += [
    ("maxcost-number", "maxCost as a number", R, "spec.maxCost", task({"maxCost": 250})),
    ("backoff-negative", "backoffLimit negative", R, "spec.runPolicy.backoffLimit", task({"runPolicy": {"backoffLimit": -1}})),
    ("backoff-huge", "backoffLimit above 100", R, "spec.runPolicy.backoffLimit", task({"runPolicy": {"backoffLimit": 101}})),
    ("active-deadline-zero", "activeDeadlineSeconds 0", R, "spec.runPolicy.activeDeadlineSeconds", task({"runPolicy": {"activeDeadlineSeconds": 0}})),
    ("active-deadline-negative", "activeDeadlineSeconds negative", R, "spec.runPolicy.activeDeadlineSeconds", task({"runPolicy": {"activeDeadlineSeconds": -5}})),
    ("ttl-negative", "ttlSecondsAfterFinished negative", R, "spec.runPolicy.ttlSecondsAfterFinished", task({"runPolicy": {"ttlSecondsAfterFinished": -1}})),
    ("clean-policy-unknown", "an unknown cleanPodPolicy", R, "spec.runPolicy.cleanPodPolicy", task({"runPolicy": {"cleanPodPolicy": "Never"}})),
    ("suspend-string", "suspend as text", R, "spec.runPolicy.suspend", task({"runPolicy": {"suspend": "yes"}})),
    ("idle-action-unknown", "idlePolicy.action Kill", R, "spec.idlePolicy.action", task({"idlePolicy": {"action": "Kill"}})),
    ("idle-below-zero", "idlePolicy.belowPercent 0", R, "spec.idlePolicy.belowPercent", task({"idlePolicy": {"belowPercent": 0}})),
    ("idle-after-seconds", "idlePolicy.after as a number", R, "spec.idlePolicy.after", task({"idlePolicy": {"after": 1800}})),
    ("idle-after-words", "idlePolicy.after half an hour", R, "spec.idlePolicy.after", task({"idlePolicy": {"after": "half an hour"}})),
    ("pod-security-unknown", "podSecurity.level Privileged (not a level Valley renders)", R, "spec.podSecurity.level", task({"podSecurity": {"level": "Privileged"}})),
    ("pod-security-root", "podSecurity.runAsUser 0 (root is what Restricted rules out)", R, "spec.podSecurity.runAsUser", task({"podSecurity": {"level": "Restricted", "runAsUser": 0}})),
    ("image-too-long", "a worker image reference of 2000 characters", R, "spec.worker.image", task({"worker": {"image": "r/" + "i" * 2000}})),
    ("args-too-many", "300 launcher arguments", R, "spec.master.args", task({"master": {"args": ["x"] * 300}})),
    ("name-51", "a name of 51 characters (worker pod names would pass 63)", R, "metadata.name must be at most 50 characters", task(name="a" * 51)),
    ("name-63", "a name of 63 characters", R, "metadata.name must be at most 50 characters", task(name="b" * 63)),
    ("name-uppercase", "a name with capitals", R, "metadata.name", task(name="Training1")),
    ("name-underscore", "a name with an underscore", R, "metadata.name", task(name="train_1")),
    ("name-dots-too-long", "a dotted name past 50 characters", R, "metadata.name must be at most 50 characters", task(name="x." * 30 + "y")),
    ("name-digit-first", "a name starting with a digit (its Service would not be a DNS-1035 label)", R, "metadata.name must start with a lowercase letter", task(name="1train")),
    ("name-dot", "a name with a dot (pod hostnames would be cut at it)", R, "no '.'", task(name="train.v2")),
    ("name-dash-last", "a name ending in '-'", R, "metadata.name must start with a lowercase letter", task(name="train-")),
    # Accepted by the API server; Valley reports what it cannot do.
    ("gpus-999", "999 GPUs per worker: no node has that many", "phase=Pending", "", task({"worker": {"gpus": "999"}})),
    ("gang-too-large", "a minimum gang of 1000 workers of 8 GPUs", "phase=Pending", "", task({"replicas": {"min": 1000, "max": 1000}, "worker": {"gpus": "8"}})),
    ("topology-unknown-level", "a topology level the operator does not declare", "phase=Pending", "which the operator does not declare", task({"topology": {"required": "blok"}})),
    ("pytorch-torchrun-nnodes", "a PyTorch command that sets torchrun's --nnodes itself", "phase=Failed", "--nnodes is Valley's to set",
     pytorch({"worker": {"image": "valley.dev/examples/pytorch:1", "gpus": "1", "command": ["torchrun", "--nnodes=1:8", "train.py"]}})),
    ("pytorch-torchrun-rendezvous", "a PyTorch command with a rendezvous of its own", "phase=Failed", "--rdzv-endpoint is Valley's to set",
     pytorch({"worker": {"image": "valley.dev/examples/pytorch:1", "gpus": "1", "command": ["torchrun", "--rdzv-endpoint", "elsewhere:29400", "train.py"]}})),
    ("hostfile-too-large", "a maximum of 10000 workers, more than its launcher's hostfile annotation holds", "phase=Failed", "the launcher's hostfile for 10000 workers", task({"replicas": {"min": 1, "max": 10000}})),
    ("selector-matches-nothing", "a worker template selecting no node", "phase=Pending", "", task({"worker": {"template": {"spec": {"nodeSelector": {"valley.dev/no-such-label": "x"}}}}})),
    ("image-leading-space", "an image with a leading space: the API server refuses its pods", "event=CreateFailed", "must not have leading or trailing whitespace", task({"worker": {"image": " valley.dev/examples/worker:1"}})),
    ("image-trailing-space", "a launcher image with a trailing space", "event=CreateFailed", "must not have leading or trailing whitespace", task({"master": {"image": "valley.dev/examples/launcher:1 "}})),
    ("resources-bad-quantity", "a worker CPU request that is not a quantity", "event=CreateFailed", "quantities must match", task({"worker": {"resources": {"requests": {"cpu": "lots"}}}})),
    ("template-bad-volume", "a worker template mounting a volume it does not define", "event=CreateFailed", "Not found: \"nope\"", task({"worker": {"template": {"spec": {"containers": [{"name": "worker", "volumeMounts": [{"name": "nope", "mountPath": "/data"}]}]}}}})),
    ("template-bad-toleration", "a toleration with an unknown operator", "event=CreateFailed", "operator", task({"worker": {"template": {"spec": {"tolerations": [{"key": "k", "operator": "Sometimes"}]}}}})),
    ("maxcost-zero", "a budget of 0: suspended before it spends anything", "phase=Suspended", "reached spec.maxCost", task({"maxCost": "0"})),
    ("maxcost-absurd", "a budget of nearly a billion", "phase=Running", "", task({"maxCost": "999999999.99"})),
    ("deadline-past", "a deadline long past: run now rather than wait for cheaper capacity", "phase=Running", "", task({"deadline": "2020-01-01T00:00:00Z", "reduceCost": True, "estimatedDuration": "1h"})),
    ("deadline-far", "a deadline in 2200", "phase=Running", "", task({"deadline": "2200-01-01T00:00:00Z", "estimatedDuration": "1h"})),
    ("duration-zero", "an estimated duration of 0s", "phase=Running", "", task({"estimatedDuration": "0s"})),
    ("duration-huge", "an estimated duration of 100000 days: beyond what a time may have added to it", "phase=Failed", "(at most 36500d)", task({"estimatedDuration": "100000d"})),
    ("active-deadline-1s", "an active deadline of one second", "phase=Failed", "ran longer than activeDeadlineSeconds", task({"runPolicy": {"activeDeadlineSeconds": 1}})),
    ("tolerations-conflicting", "tolerations that contradict each other", "phase=Running", "", task({"worker": {"template": {"spec": {"tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}, {"key": "k", "operator": "Equal", "value": "v", "effect": "NoExecute"}]}}}})),
    ("template-overrides-name", "a worker template naming the pod itself", "phase=Running", "", task({"worker": {"template": {"metadata": {"name": "hijack", "namespace": "kube-system"}}}})),
    ("template-overrides-restart", "a worker template asking for restartPolicy Always", "phase=Running", "", task({"worker": {"template": {"spec": {"restartPolicy": "Always"}}}})),
    ("labels-huge", "a task with 100 labels", "phase=Running", "", task(metadata={"labels": {f"l{i}": "v" for i in range(100)}})),
    ("single-fraction-tiny", "a Single task on a thousandth of a GPU", "phase=Running", "", single({"worker": {"gpus": "0.001"}})),
    ("command-empty", "an empty launcher command", "phase=Running", "", task({"master": {"command": []}})),
    ("image-unicode", "an image name in Unicode", "phase=Running", "", task({"worker": {"image": "registry.example/тренировка:1"}})),
    ("pvc-missing-claim", "a checkpoint on a claim that does not exist", "phase=Pending", "", task({"checkpoint": {"uri": "pvc://no-such-claim/ckpt"}})),
]

POLICIES = [
    ("no-gpu", "a policy without GPU prices", R, "spec.gpu", {}),
    ("gpu-empty", "an empty GPU price list", R, "spec.gpu", {"gpu": []}),
    ("price-negative", "a negative GPU price", R, "spec.gpu[0].onDemand", {"gpu": [{"onDemand": "-1"}]}),
    ("price-word", "a GPU price in words", R, "spec.gpu[0].onDemand", {"gpu": [{"onDemand": "cheap"}]}),
    ("price-number", "a GPU price as a number", R, "spec.gpu[0].onDemand", {"gpu": [{"onDemand": 2.4}]}),
    ("price-too-precise", "a price with 7 decimals", R, "spec.gpu[0].onDemand", {"gpu": [{"onDemand": "1.0000001"}]}),
    ("price-missing", "a GPU entry without an on-demand price", R, "spec.gpu[0].onDemand", {"gpu": [{"spot": "1.00"}]}),
    ("spot-negative", "a negative spot price", R, "spec.gpu[0].spot", {"gpu": [{"onDemand": "2.00", "spot": "-0.5"}]}),
    ("vendor-unknown", "an unknown GPU vendor", R, "spec.gpu[0].match.vendor", {"gpu": [{"match": {"vendor": "tpu"}, "onDemand": "1.00"}]}),
    ("currency-lowercase", "a currency in lower case", R, "spec.currency", {"currency": "usd", "gpu": [{"onDemand": "1.00"}]}),
    ("currency-symbol", "a currency symbol", R, "spec.currency", {"currency": "$", "gpu": [{"onDemand": "1.00"}]}),
    ("pue-below-one", "a PUE below 1", R, "spec.electricity.pue", {"gpu": [{"onDemand": "1.00"}], "electricity": {"pue": "0.9"}}),
    ("pue-absurd", "a PUE of 10", R, "spec.electricity.pue", {"gpu": [{"onDemand": "1.00"}], "electricity": {"pue": "10"}}),
    ("watts-negative", "negative watts", R, "spec.electricity.defaultWattsPerGpu", {"gpu": [{"onDemand": "1.00"}], "electricity": {"defaultWattsPerGpu": -300}}),
    ("watts-huge", "5001 watts per GPU", R, "spec.electricity.wattsPerGpu[0].watts", {"gpu": [{"onDemand": "1.00"}], "electricity": {"wattsPerGpu": [{"watts": 5001}]}}),
    ("window-same-start-end", "a tariff window that starts where it ends", R, "a window's start and end must differ", {"gpu": [{"onDemand": "1.00"}], "electricity": {"windows": [{"name": "w", "perKWh": "0.1", "start": "08:00", "end": "08:00"}]}}),
    ("window-bad-hour", "a window starting at 25:00", R, "spec.electricity.windows[0].start", {"gpu": [{"onDemand": "1.00"}], "electricity": {"windows": [{"name": "w", "perKWh": "0.1", "start": "25:00", "end": "06:00"}]}}),
    ("window-bad-minute", "a window ending at 06:60", R, "spec.electricity.windows[0].end", {"gpu": [{"onDemand": "1.00"}], "electricity": {"windows": [{"name": "w", "perKWh": "0.1", "start": "01:00", "end": "06:60"}]}}),
    ("window-12h-clock", "a window in 12-hour time", R, "spec.electricity.windows[0].start", {"gpu": [{"onDemand": "1.00"}], "electricity": {"windows": [{"name": "w", "perKWh": "0.1", "start": "11pm", "end": "06:00"}]}}),
    ("window-no-name", "a window without a name", R, "spec.electricity.windows[0].name", {"gpu": [{"onDemand": "1.00"}], "electricity": {"windows": [{"perKWh": "0.1", "start": "01:00", "end": "06:00"}]}}),
    ("window-negative-price", "a window with a negative price", R, "spec.electricity.windows[0].perKWh", {"gpu": [{"onDemand": "1.00"}], "electricity": {"windows": [{"name": "w", "perKWh": "-0.1", "start": "01:00", "end": "06:00"}]}}),
    ("windows-49", "49 tariff windows", R, "spec.electricity.windows", {"gpu": [{"onDemand": "1.00"}], "electricity": {"windows": [{"name": f"w{i}", "perKWh": "0.1", "start": "01:00", "end": "02:00"} for i in range(49)]}}),
    ("multiplier-negative", "a negative priority multiplier", R, "spec.priority.multipliers[0].multiplier", {"gpu": [{"onDemand": "1.00"}], "priority": {"multipliers": [{"minPriority": 0, "multiplier": "-1"}]}}),
    ("multiplier-priority-101", "a multiplier from priority 101", R, "spec.priority.multipliers[0].minPriority", {"gpu": [{"onDemand": "1.00"}], "priority": {"multipliers": [{"minPriority": 101, "multiplier": "1"}]}}),
    ("patience-words", "a patience in words", R, "spec.reduceCost.patience", {"gpu": [{"onDemand": "1.00"}], "reduceCost": {"patience": "a while"}}),
    ("growth-above-one", "a marginal speedup above 1", R, "spec.growth.minMarginalSpeedup", {"gpu": [{"onDemand": "1.00"}], "growth": {"minMarginalSpeedup": "1.5"}}),
    ("spot-label-no-value", "a spot label without a value", R, "spec.capacityClass.spotLabels[0].value", {"gpu": [{"onDemand": "1.00"}], "capacityClass": {"spotLabels": [{"key": "k"}]}}),
    # Accepted by the API server, refused by Valley with an Event on the policy.
    ("timezone-unknown", "an unknown time zone", "event=InvalidPolicy", "timeZone", {"gpu": [{"onDemand": "1.00"}], "electricity": {"timeZone": "Mars/Olympus_Mons"}}),
    ("timezone-path", "a time zone that climbs out of the tz database", "event=InvalidPolicy", "timeZone", {"gpu": [{"onDemand": "1.00"}], "electricity": {"timeZone": "../../etc/passwd"}}),
    ("timezone-empty", "an empty time zone", "event=InvalidPolicy", "timeZone", {"gpu": [{"onDemand": "1.00"}], "electricity": {"timeZone": ""}}),
    ("window-bad-day", "a window on Funday", R, "days[0]", {"gpu": [{"onDemand": "1.00"}], "electricity": {"windows": [{"name": "w", "perKWh": "0.1", "start": "01:00", "end": "06:00", "days": ["Funday"]}]}}),
    ("patience-too-long", "a patience of a year", "event=InvalidPolicy", "patience", {"gpu": [{"onDemand": "1.00"}], "reduceCost": {"patience": "365d"}}),
]

CHECKPOINTS = [
    ("garbage", "not JSON at all", "event=CheckpointUnreadable", "", "this is not json\n"),
    ("empty", "an empty file", "event=CheckpointUnreadable", "", ""),
    ("array", "a JSON list", "event=CheckpointUnreadable", "", "[1, 2, 3]\n"),
    ("step-string", "a step as text", "event=CheckpointUnreadable", "step", '{"step": "1200", "time": "2026-11-22T06:01:02Z"}\n'),
    ("step-negative", "a negative step", "event=CheckpointUnreadable", "step", '{"step": -5, "time": "2026-11-22T06:01:02Z"}\n'),
    ("step-fraction", "a fractional step", "event=CheckpointUnreadable", "step", '{"step": 12.5, "time": "2026-11-22T06:01:02Z"}\n'),
    ("no-step", "no step", "event=CheckpointUnreadable", "step", '{"time": "2026-11-22T06:01:02Z"}\n'),
    ("time-garbage", "a time that is not one", "event=CheckpointUnreadable", "time", '{"step": 10, "time": "yesterday"}\n'),
    ("time-number", "a time as a number", "event=CheckpointUnreadable", "time", '{"step": 10, "time": 1795316645}\n'),
    ("binary", "binary bytes", "event=CheckpointUnreadable", "", "\x00\x01\x02\xff\xfe"),
    ("truncated", "a record cut off mid-way (a non-atomic write)", "event=CheckpointUnreadable", "", '{"step": 1200, "time": "2026-11-22T06:0'),
    ("nested-deep", "JSON nested 10000 deep", "event=CheckpointUnreadable", "", "[" * 10000 + "]" * 10000),
    ("world-size-negative", "a negative world size", "event=CheckpointUnreadable", "worldSize", '{"step": 10, "time": "2026-11-22T06:01:02Z", "worldSize": -1}\n'),
    ("epoch-string", "an epoch as text", "event=CheckpointUnreadable", "epoch", '{"step": 10, "time": "2026-11-22T06:01:02Z", "epoch": "3"}\n'),
    ("object-number", "an object name as a number", "event=CheckpointUnreadable", "object", '{"step": 10, "time": "2026-11-22T06:01:02Z", "object": 7}\n'),
]

# Merge patches of a running worker pod's status, as kubelets and runtimes have been seen to write
# them. Valley must read each without wedging the task. ${NOW} is the time of the patch: the
# disruption controller resets a DisruptionTarget condition older than two minutes on a pod that is
# not being deleted, so one from the past would be gone before Valley could read it.
PODS = [
    ("phase-unknown", "phase Unknown (kubelet lost contact)", "phase=Running", "", {"phase": "Unknown"}),
    ("phase-empty", "an empty phase", "phase=Running", "", {"phase": ""}),
    ("phase-invented", "a phase Kubernetes does not have", "phase=Running", "", {"phase": "Sleeping"}),
    ("no-container-statuses", "container statuses removed", "phase=Running", "", {"containerStatuses": None}),
    ("null-state", "a container state of null", "phase=Running", "", {"containerStatuses": [{"name": "worker", "ready": True, "state": None}]}),
    ("waiting-crashloop", "waiting in CrashLoopBackOff", "phase=Running", "", {"containerStatuses": [{"name": "worker", "ready": False, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}),
    ("waiting-imagepull", "waiting in ImagePullBackOff", "phase=Running", "", {"containerStatuses": [{"name": "worker", "ready": False, "state": {"waiting": {"reason": "ImagePullBackOff", "message": "not found"}}}]}),
    ("terminated-no-times", "terminated without startedAt or finishedAt (exit 1: a permanent error)", "phase=Failed", "exited with code 1", {"phase": "Failed", "containerStatuses": [{"name": "worker", "ready": False, "state": {"terminated": {"exitCode": 1}}}]}),
    ("terminated-null-times", "terminated with null times (exit 1: a permanent error)", "phase=Failed", "exited with code 1", {"phase": "Failed", "containerStatuses": [{"name": "worker", "ready": False, "state": {"terminated": {"exitCode": 1, "startedAt": None, "finishedAt": None}}}]}),
    ("oomkilled", "OOMKilled, exit 137", "event=Restarting", "", {"phase": "Failed", "containerStatuses": [{"name": "worker", "ready": False, "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled", "finishedAt": "2026-11-23T00:00:00Z"}}}]}),
    ("exit-code-huge", "an exit code beyond 32 bits", "event=Restarting", "", {"phase": "Failed", "containerStatuses": [{"name": "worker", "ready": False, "state": {"terminated": {"exitCode": 2147483647, "finishedAt": "2026-11-23T00:00:00Z"}}}]}),
    ("evicted", "evicted by the kubelet: a disruption, restarted from the checkpoint", "event=Disrupted", "(Evicted)", {"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."}),
    ("node-shutdown", "terminated by a node shutdown: a disruption", "event=Disrupted", "(NodeShutdown)", {"phase": "Failed", "reason": "NodeShutdown", "message": "Pod was terminated in response to imminent node shutdown."}),
    ("disruption-target", "a DisruptionTarget condition (preemption by the scheduler): a disruption", "event=Disrupted", "(PreemptionByScheduler)", {"conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler", "lastTransitionTime": "${NOW}"}]}),
    ("disruption-target-false", "a DisruptionTarget condition that is False", "phase=Running", "", {"conditions": [{"type": "DisruptionTarget", "status": "False", "reason": "x", "lastTransitionTime": "2026-11-23T00:00:00Z"}]}),
    ("succeeded-worker", "a worker that exits 0 while the launcher runs", "phase=Running", "", {"phase": "Succeeded", "containerStatuses": [{"name": "worker", "ready": False, "state": {"terminated": {"exitCode": 0, "finishedAt": "2026-11-23T00:00:00Z"}}}]}),
    ("not-ready", "a worker Running but not Ready", "phase=Running", "", {"conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": "2026-11-23T00:00:00Z"}]}),
    ("start-time-garbage", "a pod start time that is not a time: the API server refuses it", R, "startTime", {"startTime": "soon"}),
    ("started-in-future", "a container started in 2099", "phase=Running", "", {"containerStatuses": [{"name": "worker", "ready": True, "state": {"running": {"startedAt": "2099-01-01T00:00:00Z"}}}]}),
    ("many-containers", "twenty sidecar statuses", "phase=Running", "", {"containerStatuses": [{"name": f"c{i}", "ready": True, "state": {"running": {"startedAt": "2026-11-23T00:00:00Z"}}} for i in range(20)]}),
]

# A checkpointing task's store, broken in the ways stores break. Valley must say so (an Event on the
# task, once per new error) and keep the task running from what it has.
def store(uri, secret):
    return {"checkpoint": {"uri": uri, **({"secretRef": {"name": "store"}} if secret is not None else {})}, "secret": secret}
GOOD = {"AWS_ACCESS_KEY_ID": "${ACCESS}", "AWS_SECRET_ACCESS_KEY": "${SECRET}", "AWS_ENDPOINT_URL": "${S3}", "AWS_REGION": "us-east-1"}
U = "s3://checkpoints/bad-inputs/"
STORES = [
    ("secret-missing", "a secretRef to a Secret that does not exist", "event=CheckpointUnreadable", "checkpoint Secret", {"checkpoint": {"uri": U + "a", "secretRef": {"name": "no-such-secret"}}, "secret": None}),
    ("no-secretref", "an s3:// store without credentials", "event=CheckpointUnreadable", "no spec.checkpoint.secretRef", store(U + "b", None)),
    ("secret-without-keys", "a Secret without AWS keys", "event=CheckpointUnreadable", "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are required", store(U + "c", {"AWS_ENDPOINT_URL": "${S3}"})),
    ("wrong-secret-key", "credentials the store refuses", "event=CheckpointUnreadable", "SignatureDoesNotMatch", store(U + "d", dict(GOOD, AWS_SECRET_ACCESS_KEY="wrong"))),
    ("unknown-access-key", "an access key the store does not know: versitygw answers 404 NoSuchKey, which reads as no checkpoint yet (AWS answers 403 InvalidAccessKeyId, reported like wrong-secret-key)", "phase=Running", "", store(U + "e", dict(GOOD, AWS_ACCESS_KEY_ID="nobody"))),
    ("bucket-missing", "a bucket that does not exist", "event=CheckpointUnreadable", "NoSuchBucket", store("s3://no-such-bucket/x", GOOD)),
    ("endpoint-refused", "an endpoint where nothing listens", "event=CheckpointUnreadable", "Couldn't connect", store(U + "f", dict(GOOD, AWS_ENDPOINT_URL="http://127.0.0.1:9"))),
    ("endpoint-garbage", "an endpoint that is not a URL", "event=CheckpointUnreadable", "checkpoint store", store(U + "g", dict(GOOD, AWS_ENDPOINT_URL="not a url"))),
    ("slow-store", "a store 3 s slow on every exchange: the task runs on, others are not held up", "phase=Running", "", store(U + "h", dict(GOOD, AWS_ENDPOINT_URL="${SLOW_S3}"))),
]

# What a tenant who may create TrainingTasks tries against Valley itself (issue 70): each refused by
# the API server or by Valley before any pod exists, naming what it refused. Run like tasks/.
def tmpl(spec=None, metadata=None):
    t = {}
    if spec is not None:
        t["spec"] = spec
    if metadata is not None:
        t["metadata"] = metadata
    return task({"worker": {"template": t}})
F = "phase=Failed"
ATTACKS = [
    ("secretref-other-namespace", "a checkpoint Secret named by a path into another namespace", R, "spec.checkpoint.secretRef.name",
     task({"checkpoint": {"uri": "s3://bkt/x", "secretRef": {"name": "../../kube-system/secrets/creds"}}})),
    ("secretref-data-slash", "a data Secret name with a slash", R, "spec.data.secretRef.name",
     task({"data": {"uri": "s3://bkt/d", "secretRef": {"name": "a/b"}}})),
    ("secretref-outputs-dotdot", "an outputs Secret named ..", R, "spec.outputs.secretRef.name",
     task({"outputs": {"uri": "s3://bkt/o", "secretRef": {"name": ".."}}})),
    ("template-replicas-annotation", "a worker template saying its GPU is split 999 ways (billing would count 1/999)", F,
     "valley.dev/time-sliced-replicas: keys under valley.dev/ are Valley's own records",
     tmpl(metadata={"annotations": {"valley.dev/time-sliced-replicas": "999"}})),
    ("template-task-label", "a worker template naming another task as its own", F, "metadata.labels.valley.dev/task",
     tmpl(metadata={"labels": {"valley.dev/task": "someone-else"}})),
    ("template-host-network", "a worker on the node's network", F, "spec.hostNetwork", tmpl({"hostNetwork": True})),
    ("template-host-pid", "a worker in the node's process namespace", F, "spec.hostPID", tmpl({"hostPID": True})),
    ("template-host-path", "a worker mounting the node's root", F, "volumes.root.hostPath",
     tmpl({"volumes": [{"name": "root", "hostPath": {"path": "/"}}]})),
    ("template-records-env", "a worker template writing Valley's sealed records of its GPUs (billing would count none)", F,
     "env.VALLEY_RECORDS: Valley's own record", tmpl({"containers": [{"name": "worker", "env": [{"name": "VALLEY_RECORDS", "value": "{}"}]}]})),
    ("template-privileged", "a privileged worker", F, "securityContext.privileged",
     tmpl({"containers": [{"name": "worker", "securityContext": {"privileged": True}}]})),
    ("template-capability", "a worker adding SYS_ADMIN", F, "capabilities.add: SYS_ADMIN",
     tmpl({"containers": [{"name": "worker", "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}]})),
    ("template-host-port", "a worker taking a port of the node", F, "ports.hostPort",
     tmpl({"containers": [{"name": "worker", "ports": [{"containerPort": 22, "hostPort": 22}]}]})),
    ("template-node-name", "a worker bound to a node of its choice", F, "spec.nodeName", tmpl({"nodeName": "a100-od-0"})),
    ("template-scheduler", "a worker bound by a scheduler of its own", F, "spec.schedulerName", tmpl({"schedulerName": "mine"})),
    ("template-priority-class", "a worker preempting through a priority class", F, "spec.priorityClassName",
     tmpl({"priorityClassName": "system-node-critical"})),
    ("template-service-account", "a worker running as another ServiceAccount", F, "spec.serviceAccountName",
     tmpl({"serviceAccountName": "admin"})),
    ("template-tolerate-all", "a worker tolerating every taint (other tenants' nodes)", F, "spec.tolerations",
     tmpl({"tolerations": [{"operator": "Exists"}]})),
    ("checkpoint-uri-cut-inside-a-character", "a store URI of 600 two-byte characters, which an Event note cut inside one (it stopped the operator)",
     "event=CheckpointUnreadable", "s3://bkt/\u00e9", task({"checkpoint": {"uri": "s3://bkt/" + "\u00e9" * 600}})),
]

def write(family, file, description, expect, message, body):
    os.makedirs(os.path.join(HERE, family), exist_ok=True)
    ext = "json" if family == "checkpoints" else "yaml"
    header = f"# {description}\n# expect: {expect}\n" + (f"# message: {message}\n" if message else "")
    if family == "checkpoints":
        # The record itself follows the header's end marker, byte for byte (latin-1: one byte each).
        data = (header + "# ---\n").encode() + body.encode("latin-1")
    else:
        data = (header + json.dumps(body, indent=2, ensure_ascii=False) + "\n").encode()
    with open(os.path.join(HERE, family, f"{file}.{ext}"), "wb") as f:
        f.write(data)

def main():
    for family in ["tasks", "attacks", "policies", "checkpoints", "pods", "stores"]:
        shutil.rmtree(os.path.join(HERE, family), ignore_errors=True)
    for file, desc, expect, message, obj in TASKS:
        write("tasks", file, desc, expect, message, obj)
    for file, desc, expect, message, obj in ATTACKS:
        write("attacks", file, desc, expect, message, obj)
    for file, desc, expect, message, spec in POLICIES:
        write("policies", file, desc, expect, message, {"apiVersion": "valley.dev/v1beta1", "kind": "PricingPolicy", "metadata": {"name": "case"}, "spec": spec})
    for file, desc, expect, message, text in CHECKPOINTS:
        write("checkpoints", file, desc, expect, message, text)
    for file, desc, expect, message, patch in PODS:
        write("pods", file, desc, expect, message, {"status": patch})
    for file, desc, expect, message, body in STORES:
        write("stores", file, desc, expect, message, body)
    total = len(TASKS) + len(ATTACKS) + len(POLICIES) + len(CHECKPOINTS) + len(PODS) + len(STORES)
    print(f"{total} cases: {len(TASKS)} tasks, {len(ATTACKS)} attacks, {len(POLICIES)} policies, {len(CHECKPOINTS)} checkpoint records, {len(PODS)} pod states, {len(STORES)} failing stores")

main()
