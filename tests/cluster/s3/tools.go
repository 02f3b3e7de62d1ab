//go:build tools

// Pins versitygw, the S3-compatible gateway (POSIX backend, SigV4 verified) the checkpoint-store
// tests run on loopback.
package tools

import _ "github.com/versity/versitygw/cmd/versitygw"
