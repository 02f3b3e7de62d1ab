// Command nodegen turns a node profile (YAML: pools of identical simulated nodes) into a list of
// Node objects that kwok will manage, printed as JSON for `kubectl apply -f -`.
//
// A profile keeps test clusters readable: "4 spot A100 nodes in zone b" instead of 4 copies of a
// Node manifest. Every node gets the kwok management annotation and the standard node labels.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

type taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

type pool struct {
	Name        string            `json:"name"`
	Count       int               `json:"count"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Taints      []taint           `json:"taints,omitempty"`
	Capacity    map[string]string `json:"capacity"`
}

type profile struct {
	Pools []pool `json:"pools"`
}

// The kwok process is started with --manage-nodes-with-annotation-selector on this annotation.
const kwokAnnotation = "kwok.x-k8s.io/node"

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: nodegen PROFILE.yaml")
		os.Exit(2)
	}
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "nodegen:", err)
		os.Exit(1)
	}
	var p profile
	if err := yaml.UnmarshalStrict(raw, &p); err != nil {
		fmt.Fprintf(os.Stderr, "nodegen: %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	items, err := render(p)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nodegen: %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	out, _ := json.MarshalIndent(map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, "", "  ")
	fmt.Println(string(out))
}

func render(p profile) ([]any, error) {
	if len(p.Pools) == 0 {
		return nil, fmt.Errorf("no pools")
	}
	seen := map[string]bool{}
	var items []any
	for _, pl := range p.Pools {
		if pl.Name == "" || pl.Count < 1 {
			return nil, fmt.Errorf("pool %q: name and a count >= 1 are required", pl.Name)
		}
		if seen[pl.Name] {
			return nil, fmt.Errorf("pool %q appears twice", pl.Name)
		}
		seen[pl.Name] = true
		if _, ok := pl.Capacity["pods"]; !ok {
			pl.Capacity["pods"] = "110"
		}
		for i := 0; i < pl.Count; i++ {
			name := fmt.Sprintf("%s-%d", pl.Name, i)
			labels := map[string]string{
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"type":                   "kwok",
				"valley.dev/pool":        pl.Name,
			}
			for k, v := range pl.Labels {
				labels[k] = v
			}
			annotations := map[string]string{kwokAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"}
			for k, v := range pl.Annotations {
				annotations[k] = v
			}
			spec := map[string]any{}
			if len(pl.Taints) > 0 {
				spec["taints"] = pl.Taints
			}
			items = append(items, map[string]any{
				"apiVersion": "v1",
				"kind":       "Node",
				"metadata":   map[string]any{"name": name, "labels": labels, "annotations": annotations},
				"spec":       spec,
				"status": map[string]any{
					"capacity":    pl.Capacity,
					"allocatable": pl.Capacity,
				},
			})
		}
	}
	return items, nil
}
