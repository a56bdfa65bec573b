// Package quickjs hosts QuickJS, compiled to WebAssembly by build.sh and
// embedded in the binary, on the wazero runtime. It is a sandbox backend
// (docs/spi.md, "The backend"): each evaluation runs in a wasm instance that
// no earlier run touched, with no filesystem, network, environment or host
// objects, under a memory limit, a CPU budget and a wall clock, and it reports
// how the run ended in the SPI's closed vocabulary. Deciding how a run ended
// is engine knowledge and lives here (in the C shim, from the engine's own
// state).
package quickjs

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// EngineName and EngineVersion identify the embedded engine.
const (
	EngineName    = "quickjs"
	EngineVersion = "2026-05-21 (d73189dd)"
)

// The engine's bytes, sandboxWasm, and the hash build.sh recorded beside
// them, sandboxWasmRecord, are embedded by wasm_production.go, or by
// wasm_checked.go under the build tag checkedengine (CheckedHeap).

// WasmSHA256 returns the lowercase hex SHA-256 of the embedded engine.
func WasmSHA256() string {
	sum := sha256.Sum256(sandboxWasm)
	return hex.EncodeToString(sum[:])
}

// recordedSHA256 is the hash build.sh wrote beside the wasm.
func recordedSHA256() string {
	f := strings.Fields(sandboxWasmRecord)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}
