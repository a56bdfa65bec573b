// Command gendocs writes the input documents of the benchmark workloads into a
// directory, once, so that every runner (this engine, native QuickJS,
// quickjs-emscripten on Node) reads the same bytes.
//
//	go run ./bench/cmd/gendocs -out bench/out/inputs
//
// The MCP-like documents come from bench/mcpdoc, as in quickjs/bench_test.go.
package main

import (
	"flag"
	"log"
	"os"
	"path/filepath"

	"github.com/loom-plugins/sandbox-cloudrun/bench/mcpdoc"
)

func main() {
	out := flag.String("out", "bench/out/inputs", "directory to write the input documents into")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	files := map[string]string{
		"echo.json":       `{"hello":"world","n":[1,2,3]}`,
		"fib25.json":      "25",
		"null.json":       "null",
		"mcp-1KiB.json":   mcpdoc.Document(1 << 10),
		"mcp-16KiB.json":  mcpdoc.Document(16 << 10),
		"mcp-256KiB.json": mcpdoc.Document(256 << 10),
		"mcp-4MiB.json":   mcpdoc.Document(4 << 20),
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(*out, name), []byte(text), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}
