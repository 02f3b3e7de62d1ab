//go:build tools

// Pins the real node's container runtime: containerd 2 with its runc shim and ctr. Debian's
// containerd (1.6) cannot apply Container Device Interface edits, which is how a DRA driver's
// kubelet plugin hands a container its devices. Built without the btrfs, devmapper and zfs
// snapshotters (cgo, and the node uses overlayfs).
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
