//go:build tools

// Pins the Kubeflow MPI Operator, the peer of bench/controlplane.
package tools

import _ "github.com/kubeflow/mpi-operator/cmd/mpi-operator"
