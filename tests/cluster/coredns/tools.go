//go:build tools

// Package tools keeps CoreDNS, the real node's cluster DNS (tests/cluster/node.bash), in the module
// graph; it is never compiled.
package tools

import _ "github.com/coredns/coredns"
