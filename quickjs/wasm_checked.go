//go:build checkedengine

package quickjs

import _ "embed"

// CheckedHeap reports whether the embedded engine is the checked build: with
// the build tag checkedengine, the engine is sandbox-checked.wasm, the same
// recipe with red zones around every heap block (build.sh CHECKED=1), for
// tests. A damaged red zone ends the run as an engine failure that names
// the block ("checked heap: ..."). Never shipped.
const CheckedHeap = true

//go:embed sandbox-checked.wasm
var sandboxWasm []byte

//go:embed sandbox-checked.wasm.sha256
var sandboxWasmRecord string
