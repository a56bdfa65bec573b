// Command gendocs writes the input documents of the benchmark workloads into a
// directory, once, so that every runner (this engine, native QuickJS,
// quickjs-emscripten on Node) reads the same bytes.
//
//	go run ./bench/cmd/gendocs -out bench/out/inputs
//
// The MCP-like documents are built exactly as mcpDocument in
// quickjs/bench_test.go builds them.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
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
		"mcp-1KiB.json":   mcpDocument(1 << 10),
		"mcp-16KiB.json":  mcpDocument(16 << 10),
		"mcp-256KiB.json": mcpDocument(256 << 10),
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(*out, name), []byte(text), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

// mcpDocument builds an MCP-like tool result of about n bytes of JSON. It is a
// copy of mcpDocument in quickjs/bench_test.go; keep the two in step.
func mcpDocument(n int) string {
	type item struct {
		ID     int      `json:"id"`
		Title  string   `json:"title"`
		State  string   `json:"state"`
		Labels []string `json:"labels"`
		Score  float64  `json:"score"`
		Author struct {
			Login string `json:"login"`
			Admin bool   `json:"admin"`
		} `json:"author"`
	}
	var items []item
	size := 0
	for i := 0; size < n; i++ {
		it := item{ID: i, Title: fmt.Sprintf("Issue number %d: something is not right", i), State: []string{"open", "closed"}[i%2],
			Labels: []string{"bug", "p" + fmt.Sprint(i%4)}, Score: float64(i%100) / 7}
		it.Author.Login = fmt.Sprintf("user%d", i%37)
		it.Author.Admin = i%11 == 0
		b, _ := json.Marshal(it)
		size += len(b) + 1
		items = append(items, it)
	}
	doc := map[string]any{"content": []any{map[string]any{"type": "json", "items": items}}, "isError": false}
	out, _ := json.Marshal(doc)
	return string(out)
}
