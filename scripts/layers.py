#!/usr/bin/env python3
"""The include graph points one way (DESIGN.md, section 2): the kube client and process plumbing
(operator/) at the ground, the API types (controllers/api/) on it, the pure cores above them, the
loops (controllers/task/) above those, the binaries (cmd/) on top. The cores themselves stand in one
order, each using only those before it (CORES). Prints every include that points back up and exits
1 if there is one.  usage: layers.py [REPO]"""
import pathlib
import re
import sys

repo = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
# The pure cores, lowest first: GPU resources; rendering; prices and cost; the planner's decisions;
# tenants; the lifecycle decider; and the inputs, which read API objects into the planner's view
# and configure it from a PricingPolicy (the one path the operator and the simulator share).
CORES = ("gpu", "render", "cost", "planner", "tenancy", "lifecycle", "inputs")


def layer(path: str):
    """(0 ground, 1 API types, 2 pure cores, 3 loops, 4 binaries; the core's place in CORES), None
    for what is not production code."""
    if path.startswith("operator/"):
        return (0, 0)
    if path.startswith("controllers/api/"):
        return (1, 0)
    for i, c in enumerate(CORES):
        if path.startswith(f"controllers/{c}/"):
            return (2, i)
    if path.startswith("controllers/task/"):
        return (3, 0)
    if path.startswith("cmd/"):
        return (4, 0)
    return None


NAMES = ["ground (operator/)", "API types", "pure core", "loops (controllers/task/)", "binaries (cmd/)"]


def name(place) -> str:
    return f"core {CORES[place[1]]}" if place[0] == 2 else NAMES[place[0]]
include = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
bad = []
files = 0
# Only the layered trees are walked: the rest of a checkout may change while this runs (the real
# node's containerd state under .valley/ comes and goes during make test).
sources = [f for top in ("operator", "controllers", "cmd") for f in (repo / top).glob("**/*")]
for f in sorted(sources):
    rel = f.relative_to(repo).as_posix()
    if f.suffix not in (".h", ".cc") or layer(rel) is None:
        continue
    files += 1
    mine = layer(rel)
    for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
        m = include.match(line)
        if not m or m.group(1).startswith("valley/"):  # generated (version.h)
            continue
        target = m.group(1)
        theirs = layer(target)
        if theirs is None:
            bad.append(f"{rel}:{n}: includes {target}, which is not production code")
        elif theirs > mine:
            bad.append(f"{rel}:{n}: a {name(mine)} file includes {target}, a {name(theirs)} file")
for b in bad:
    print(b)
print(f"layers: {files} files, {len(bad)} includes pointing up")
sys.exit(1 if bad else 0)
