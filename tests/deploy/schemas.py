#!/usr/bin/env python3
"""JSON schemas for kubeconform, made offline from what the project pins: the built-in kinds from
the pinned Kubernetes release's OpenAPI document (k8s.io/kubernetes's api/openapi-spec/swagger.json)
and custom kinds from CRD files (Valley's own, the Prometheus Operator's). One file per kind and
version, named as kubeconform looks for it (deployment-apps-v1.json, service-v1.json), each standalone
(the definitions it refers to are copied in).

usage: schemas.py OUT_DIR SWAGGER_JSON [CRD_YAML ...]"""
import json
import os
import sys

import yaml

INT_OR_STRING = {"oneOf": [{"type": "string"}, {"type": "integer"}]}
QUANTITY = {"oneOf": [{"type": "string"}, {"type": "number"}]}


def fix_k8s(definitions):
    # What the API server accepts beyond the document's types: ports and quantities as numbers.
    for name, d in definitions.items():
        if d.get("format") == "int-or-string":
            definitions[name] = dict(INT_OR_STRING)
        elif name.endswith(".api.resource.Quantity"):
            definitions[name] = dict(QUANTITY)


def strict(node):
    """Objects with declared properties take no others (as the API server prunes or refuses them):
    a misspelt field is an error, not a silent no-op."""
    if isinstance(node, list):
        for x in node:
            strict(x)
    elif isinstance(node, dict):
        if "properties" in node and "additionalProperties" not in node and not node.get("x-kubernetes-preserve-unknown-fields"):
            node["additionalProperties"] = False
        for v in node.values():
            strict(v)


def closure(definitions, name):
    seen, todo = set(), [name]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        stack = [definitions[n]]
        while stack:
            x = stack.pop()
            if isinstance(x, dict):
                ref = x.get("$ref")
                if isinstance(ref, str) and ref.startswith("#/definitions/"):
                    todo.append(ref[len("#/definitions/"):])
                stack.extend(x.values())
            elif isinstance(x, list):
                stack.extend(x)
    return seen


def write(out, kind, group, version, schema):
    # kubeconform's {{.ResourceKind}}{{.KindSuffix}}: the group's first label, none for core.
    suffix = f"-{group.split('.')[0]}-{version}" if group else f"-{version}"
    with open(os.path.join(out, f"{kind.lower()}{suffix}.json"), "w") as f:
        json.dump(schema, f)


def from_swagger(out, path):
    definitions = json.load(open(path))["definitions"]
    fix_k8s(definitions)
    strict(definitions)
    count = 0
    for name, d in definitions.items():
        for gvk in d.get("x-kubernetes-group-version-kind", []):
            schema = dict(definitions[name])
            schema["definitions"] = {n: definitions[n] for n in closure(definitions, name) if n != name}
            write(out, gvk["kind"], gvk.get("group", ""), gvk["version"], schema)
            count += 1
    return count


def crd_schema(node):
    """A CRD's structural schema as plain JSON schema (int-or-string, preserved unknown fields)."""
    if isinstance(node, list):
        return [crd_schema(x) for x in node]
    if not isinstance(node, dict):
        return node
    if node.get("x-kubernetes-int-or-string"):
        return dict(INT_OR_STRING)
    out = {k: crd_schema(v) for k, v in node.items() if not k.startswith("x-kubernetes-")}
    if "properties" in out and "additionalProperties" not in out and not node.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    if node.get("nullable"):
        t = out.get("type")
        if isinstance(t, str):
            out["type"] = [t, "null"]
    return out


def from_crd(out, path):
    count = 0
    for doc in yaml.safe_load_all(open(path)):
        if not doc or doc.get("kind") != "CustomResourceDefinition":
            continue
        spec = doc["spec"]
        for v in spec["versions"]:
            schema = crd_schema(v["schema"]["openAPIV3Schema"])
            write(out, spec["names"]["kind"], spec["group"], v["name"], schema)
            count += 1
    return count


def main():
    out, swagger, crds = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(out, exist_ok=True)
    n = from_swagger(out, swagger)
    for c in crds:
        n += from_crd(out, c)
    print(f"schemas: {n} kinds in {out}")


if __name__ == "__main__":
    main()
