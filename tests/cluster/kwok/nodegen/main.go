// Command nodegen turns a node profile (YAML: pools of identical simulated nodes) into a list of
// Node objects that kwok will manage, printed as JSON for `kubectl apply -f -`; with --node-names,
// only the nodes' names, one per line.
//
// With --fleet NAME the same nodes are a fleet of their own: named NAME-<pool>-<i> and labelled
// valley.dev/fleet=NAME, so that several copies of one profile share a cluster (the e2e suite's
// parallel shards each plan on one: tests/e2e/support.h).
//
// A profile keeps test clusters readable: "4 spot A100 nodes in zone b" instead of 4 copies of a
// Node manifest. Every node gets the kwok management annotation and the standard node labels.
//
// A pool with `dra` has its GPUs published through Dynamic Resource Allocation instead of a device
// plugin: nodegen writes what a DRA driver's kubelet plugin would (a simulated driver: no plugin
// runs, nothing is prepared): one ResourceSlice per node, a pool of its own, with `devices` devices
// carrying `attributes` (text) and `capacity` (quantities), and the DeviceClass the driver's chart
// installs, named after the driver.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

type taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

type dra struct {
	Driver     string            `json:"driver"`
	Devices    int               `json:"devices"`
	Attributes map[string]string `json:"attributes,omitempty"`
	Capacity   map[string]string `json:"capacity,omitempty"`
}

type pool struct {
	Name        string            `json:"name"`
	Count       int               `json:"count"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Taints      []taint           `json:"taints,omitempty"`
	Capacity    map[string]string `json:"capacity"`
	DRA         *dra              `json:"dra,omitempty"`
}

type profile struct {
	Pools []pool `json:"pools"`
}

// The kwok process is started with --manage-nodes-with-annotation-selector on this annotation.
const kwokAnnotation = "kwok.x-k8s.io/node"

// The label of a fleet's nodes (--fleet).
const fleetLabel = "valley.dev/fleet"

func main() {
	namesOnly := flag.Bool("node-names", false, "print only the nodes' names, one per line")
	fleet := flag.String("fleet", "", "name the nodes <fleet>-<pool>-<i> and label them valley.dev/fleet=<fleet>")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: nodegen [--node-names] [--fleet NAME] PROFILE.yaml")
		os.Exit(2)
	}
	path := flag.Arg(0)
	raw, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nodegen:", err)
		os.Exit(1)
	}
	var p profile
	if err := yaml.UnmarshalStrict(raw, &p); err != nil {
		fmt.Fprintf(os.Stderr, "nodegen: %s: %v\n", path, err)
		os.Exit(1)
	}
	items, err := render(p, *fleet)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nodegen: %s: %v\n", path, err)
		os.Exit(1)
	}
	if *namesOnly {
		for _, item := range items {
			if o := item.(map[string]any); o["kind"] == "Node" {
				fmt.Println(o["metadata"].(map[string]any)["name"])
			}
		}
		return
	}
	out, _ := json.MarshalIndent(map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, "", "  ")
	fmt.Println(string(out))
}

func render(p profile, fleet string) ([]any, error) {
	if len(p.Pools) == 0 {
		return nil, fmt.Errorf("no pools")
	}
	seen := map[string]bool{}
	classes := map[string]bool{}
	var items []any
	for _, pl := range p.Pools {
		if pl.Name == "" || pl.Count < 1 {
			return nil, fmt.Errorf("pool %q: name and a count >= 1 are required", pl.Name)
		}
		if pl.DRA != nil && (pl.DRA.Driver == "" || pl.DRA.Devices < 1) {
			return nil, fmt.Errorf("pool %q: dra needs a driver and devices >= 1", pl.Name)
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
			if fleet != "" {
				name = fleet + "-" + name
			}
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
			if fleet != "" {
				labels[fleetLabel] = fleet
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
			if pl.DRA != nil {
				items = append(items, resourceSlice(name, pl.Name, fleet, *pl.DRA))
			}
		}
		if pl.DRA != nil && !classes[pl.DRA.Driver] {
			classes[pl.DRA.Driver] = true
			items = append(items, deviceClass(pl.DRA.Driver))
		}
	}
	return items, nil
}

// The slice a DRA driver's kubelet plugin publishes for node `name`: its devices, one pool per node.
func resourceSlice(name, pool, fleet string, d dra) map[string]any {
	attributes := map[string]any{}
	for k, v := range d.Attributes {
		attributes[k] = map[string]any{"string": v}
	}
	capacity := map[string]any{}
	for k, v := range d.Capacity {
		capacity[k] = map[string]any{"value": v}
	}
	devices := make([]any, 0, d.Devices)
	for i := 0; i < d.Devices; i++ {
		device := map[string]any{"name": fmt.Sprintf("gpu-%d", i), "attributes": attributes}
		if len(capacity) > 0 {
			device["capacity"] = capacity
		}
		devices = append(devices, device)
	}
	labels := map[string]string{"type": "kwok", "valley.dev/pool": pool, "kubernetes.io/hostname": name}
	if fleet != "" {
		labels[fleetLabel] = fleet
	}
	return map[string]any{
		"apiVersion": "resource.k8s.io/v1",
		"kind":       "ResourceSlice",
		"metadata": map[string]any{
			"name":   name + "-" + strings.ReplaceAll(d.Driver, ".", "-"),
			"labels": labels,
		},
		"spec": map[string]any{
			"driver":   d.Driver,
			"nodeName": name,
			"pool":     map[string]any{"name": name, "generation": 1, "resourceSliceCount": 1},
			"devices":  devices,
		},
	}
}

// The DeviceClass a driver installs under its own name: every device it publishes.
func deviceClass(driver string) map[string]any {
	return map[string]any{
		"apiVersion": "resource.k8s.io/v1",
		"kind":       "DeviceClass",
		"metadata":   map[string]any{"name": driver},
		"spec": map[string]any{
			"selectors": []any{map[string]any{"cel": map[string]any{"expression": fmt.Sprintf("device.driver == %q", driver)}}},
		},
	}
}
