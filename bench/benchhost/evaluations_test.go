package benchhost

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// answer is a batch's answer of n ok lines and its summary, as the route
// writes it; edit changes line i (n: the summary) before it is joined.
func answer(n int, edit func(i int, line string) string) []byte {
	var b strings.Builder
	for i := 0; i <= n; i++ {
		line := fmt.Sprintf(`{"index":%d,"ok":true,"value":{"a":1},"usage":{"cpuMs":0.1}}`, i)
		if i == n {
			line = fmt.Sprintf(`{"summary":{"items":%d,"outcomes":{"ok":%d},"problems":0,"notRun":0,"usage":{}}}`, n, n)
		}
		if edit != nil {
			line = edit(i, line)
		}
		b.WriteString(line + "\n")
	}
	return []byte(b.String())
}

// A batch counts only when every input has its ok line, in order, and the
// summary says the same: each way a route could answer otherwise fails.
func TestCheckBatch(t *testing.T) {
	if err := CheckBatch(answer(3, nil), 3); err != nil {
		t.Fatalf("a whole answer: %v", err)
	}
	replace := func(at int, old, new string) func(int, string) string {
		return func(i int, l string) string {
			if i == at {
				return strings.Replace(l, old, new, 1)
			}
			return l
		}
	}
	for name, data := range map[string][]byte{
		"an input failed":  answer(3, replace(1, `"ok":true,"value":{"a":1}`, `"ok":false,"failure":{"channel":"scriptError"}`)),
		"a problem line":   answer(3, replace(1, `"ok":true,"value":{"a":1},"usage":{"cpuMs":0.1}`, `"problem":{"status":503}`)),
		"not run":          answer(3, replace(2, `"ok":true,"value":{"a":1},"usage":{"cpuMs":0.1}`, `"notRun":true,"detail":"timeout"`)),
		"out of order":     answer(3, replace(0, `"index":0`, `"index":1`)),
		"no index":         answer(3, replace(0, `"index":0,`, ``)),
		"summary short":    answer(3, replace(3, `"items":3`, `"items":2`)),
		"summary not ok":   answer(3, replace(3, `{"ok":3}`, `{"ok":2,"scriptError":1}`)),
		"summary ok short": answer(3, replace(3, `{"ok":3}`, `{"ok":2}`)),
		"summary problem":  answer(3, replace(3, `"problems":0`, `"problems":1`)),
		"summary notRun":   answer(3, replace(3, `"notRun":0`, `"notRun":1`)),
		"no summary": answer(3, func(i int, l string) string {
			if i == 3 {
				return `{"index":3,"ok":true}`
			}
			return l
		}),
		"a line missing": []byte(strings.Replace(string(answer(3, nil)), `{"index":1,"ok":true,"value":{"a":1},"usage":{"cpuMs":0.1}}`+"\n", "", 1)),
		"cut":            answer(3, nil)[:len(answer(3, nil))-1],
		"not JSON":       answer(3, replace(1, `{`, `[`)),
		"empty":          nil,
		"one extra":      append(answer(3, nil), []byte("{\"summary\":{}}\n")...),
	} {
		if err := CheckBatch(data, 3); err == nil {
			t.Errorf("%s: CheckBatch accepted %s", name, data)
		}
	}
}

// A batch body is the script's reference and n copies of the input, JSON
// the route can read.
func TestBatchBody(t *testing.T) {
	var b struct {
		ScriptRef string            `json:"scriptRef"`
		Inputs    []json.RawMessage `json:"inputs"`
	}
	if err := json.Unmarshal(BatchBody("sha256:ab", `{"n":[1,2]}`, 3), &b); err != nil {
		t.Fatal(err)
	}
	if b.ScriptRef != "sha256:ab" || len(b.Inputs) != 3 || string(b.Inputs[2]) != `{"n":[1,2]}` {
		t.Errorf("BatchBody = %+v", b)
	}
}
