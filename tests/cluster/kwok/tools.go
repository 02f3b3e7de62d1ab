//go:build tools

// Package tools keeps kwok's main package in the module graph; it is never compiled.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
