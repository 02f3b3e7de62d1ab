//go:build tools

// Pins the tools `make lint-deploy` checks the shipped manifests with: Helm (lint and template of
// deploy/helm/valley) and kubeconform (schema validation of the rendered and kustomized manifests).
package tools

import (
	_ "github.com/yannh/kubeconform/cmd/kubeconform"
	_ "helm.sh/helm/v3/cmd/helm"
)
