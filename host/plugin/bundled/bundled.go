// Package bundled holds the plugins built into the genload binary: the .wasm files that
// `make plugins` builds (gamma, uniform, router-rr) and copies into wasm/, with their SHA-256
// digests in wasm/SHA256SUMS (sha256sum's format), embedded at compile time with go:embed.
//
// wasm/ is ignored by git apart from its README.md, which keeps the embed pattern valid in a
// fresh checkout: a `go build` or `go install` that did not run `make plugins` first compiles,
// and gives a genload with no plugin built in (host/plugin says so, and what to do, when one is
// asked for by name).
package bundled

import (
	"embed"
	"io/fs"
)

//go:embed wasm
var files embed.FS

// FS returns the embedded files: <name>.wasm for each plugin built in, SHA256SUMS, README.md.
func FS() fs.FS {
	sub, err := fs.Sub(files, "wasm")
	if err != nil {
		panic(err) // "wasm" is a valid path: not reached
	}
	return sub
}
