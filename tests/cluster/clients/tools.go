//go:build tools

// Package tools keeps the programs go.mod pins in the module graph; it is never compiled.
//   - CoreDNS: the real node's cluster DNS (tests/cluster/node.bash).
//   - kube-router: its network policy controller alone (no routing, no service proxy) enforces
//     NetworkPolicies on the real node with iptables and ipsets. v2.1.0 is the only release the Go
//     module proxy serves here, and security flaws are reported against it: it runs only on the
//     test machine's own node, on a bridge that reaches nothing else, and Valley ships nothing of
//     it. (kube-network-policies needs nftables' queue expression, which this machine's kernel
//     lacks.)
//   - Karpenter's kwok provider (its main package: Karpenter's controllers with a cloud provider
//     that "launches" kwok nodes) buys the simulated GPU nodes of the autoscaled profile
//     (cluster.sh autoscaler-up). v1.13.0: the newest that Go 1.26.8 builds (v1.14.3 and v1.15.0
//     need Go 1.26.9 or newer).
//   - Kueue: the live economics benchmark's peer (bench/live).
package tools

import (
	_ "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"
	_ "github.com/coredns/coredns"
	_ "sigs.k8s.io/karpenter/kwok"
	_ "sigs.k8s.io/kueue/cmd/kueue"
)
