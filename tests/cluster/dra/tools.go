//go:build tools

// Pins the upstream DRA example driver (kubernetes-sigs/dra-example-driver), whose kubelet plugin
// runs on the real node: it publishes simulated GPUs (gpu.example.com) as ResourceSlices, and
// prepares an allocated claim by writing a CDI spec that containerd applies, so a container is
// given GPU_DEVICE_<n> variables naming its devices. No device stands behind them: there is no GPU
// here. The module's checksum is not in the public checksum database; go.sum pins it.
package tools

import _ "sigs.k8s.io/dra-example-driver/cmd/dra-example-kubeletplugin"
