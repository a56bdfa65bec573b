//go:build !checkedengine

package quickjs

import _ "embed"

// CheckedHeap reports whether the embedded engine is the checked build
// (build tag checkedengine); this one is the engine that ships.
const CheckedHeap = false

//go:embed sandbox.wasm
var sandboxWasm []byte

//go:embed sandbox.wasm.sha256
var sandboxWasmRecord string
