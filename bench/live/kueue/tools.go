//go:build tools

// Pins the economics benchmark's live peer, Kueue (bench/live): built from its module through the
// Go module proxy like the rest of the cluster's components.
package tools

import _ "sigs.k8s.io/kueue/cmd/kueue"
