//go:build tools

// Package tools keeps Karpenter's kwok provider (its main package: Karpenter's controllers with a
// cloud provider that "launches" kwok nodes) in the module graph; it is never compiled.
package tools

import _ "sigs.k8s.io/karpenter/kwok"
