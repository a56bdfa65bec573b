// Package mcpdoc builds the MCP-like tool results that the reshape benchmarks
// feed to every engine, so the Go benchmarks and the cross-engine harness
// measure the same documents.
package mcpdoc

import (
	"encoding/json"
	"fmt"
)

// Document returns an MCP-like tool result (a list of issues) of about n bytes
// of JSON. The same n always gives the same bytes.
func Document(n int) string {
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
