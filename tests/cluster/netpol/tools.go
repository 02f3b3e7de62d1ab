//go:build tools

// Pins kube-router, whose network policy controller (alone: no routing, no service proxy) enforces
// NetworkPolicies on the real node with iptables and ipsets. v2.1.0 is the only release the Go
// module proxy serves here, and security flaws are reported against it: it runs only on the test
// machine's own node, on a bridge that reaches nothing else, and Valley ships nothing of it.
// (kube-network-policies needs nftables' queue expression, which this machine's kernel lacks.)
package tools

import _ "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"
