// Package httpbench profiles the service's request path in one process: the
// service as service.New builds it from its defaults (one evaluation at a
// time, the watchdog with the kernel kill timer, a pool of two, JSON logs),
// with the engine in this process (service.InProcess), behind a real HTTP server on
// loopback, driven by a client in the same process. It exists for
// `go test -cpuprofile`, since the service itself has no pprof endpoint:
//
//	go test ./bench/httpbench -run '^$' -bench . -benchtime 3000x -cpuprofile /tmp/cpu.prof
//	go tool pprof -top /tmp/cpu.prof
package httpbench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/loom-plugins/sandbox-cloudrun/bench/mcpdoc"
	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	sandboxsvc "github.com/loom-plugins/sandbox-cloudrun/service"
	"github.com/loom-plugins/sandbox-cloudrun/telemetry"
)

// service starts the wired handler on loopback and returns its URL and the
// references of echo.js and reshape.js.
func service(b *testing.B, opts ...quickjs.Option) (url string, refs map[string]string) {
	b.Helper()
	ctx := context.Background()
	st, err := contentstore.Open(ctx, b.TempDir(), contentstore.Options{MaxScriptBytes: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	refs = map[string]string{}
	for _, name := range []string{"echo.js", "reshape.js"} {
		src, err := os.ReadFile("../workloads/" + name)
		if err != nil {
			b.Fatal(err)
		}
		ref, err := st.Put(ctx, src)
		if err != nil {
			b.Fatal(err)
		}
		refs[name] = ref.String()
	}
	log := telemetry.NewLogger(io.Discard, slog.LevelInfo, "")
	svc, err := sandboxsvc.New(ctx, sandboxsvc.Defaults(), sandboxsvc.Options{
		Logger: log, Store: st, Backend: sandboxsvc.InProcess(opts...),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { svc.Close(context.Background()) })
	if err := svc.Warm(ctx); err != nil {
		b.Fatal(err)
	}
	h := svc.Handler
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	return srv.URL, refs
}

func post(b *testing.B, c *http.Client, url string, body []byte) {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(out, []byte(`{"ok":true`)) {
		b.Fatalf("status %d: %.300s", resp.StatusCode, out)
	}
}

// BenchmarkEvaluations is POST /v1/evaluations back to back, one client.
func BenchmarkEvaluations(b *testing.B) {
	url, refs := service(b)
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
	for _, w := range []struct{ name, script, input string }{
		{"echo", "echo.js", `{"hello":"world","n":[1,2,3]}`},
		{"reshape-16KiB", "reshape.js", mcpdoc.Document(16 << 10)},
	} {
		body := []byte(fmt.Sprintf(`{"scriptRef":%q,"input":%s}`, refs[w.script], w.input))
		b.Run(w.name, func(b *testing.B) {
			for i := 0; i < 20; i++ {
				post(b, c, url+"/v1/evaluations", body)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				post(b, c, url+"/v1/evaluations", body)
			}
		})
	}
}

// BenchmarkBatch is POST /v1/evaluations:batch back to back, one client,
// 100 inputs a batch: an op is one batch, and evals/s sets it beside
// BenchmarkEvaluations' single requests.
func BenchmarkBatch(b *testing.B) {
	const n = 100
	url, refs := service(b)
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
	for _, w := range []struct{ name, script, input string }{
		{"echo", "echo.js", `{"hello":"world","n":[1,2,3]}`},
		{"reshape-16KiB", "reshape.js", mcpdoc.Document(16 << 10)},
	} {
		var body bytes.Buffer
		fmt.Fprintf(&body, `{"scriptRef":%q,"inputs":[`, refs[w.script])
		for i := range n {
			if i > 0 {
				body.WriteByte(',')
			}
			body.WriteString(w.input)
		}
		body.WriteString("]}")
		send := func(b *testing.B) {
			resp, err := c.Post(url+"/v1/evaluations:batch", "application/json", bytes.NewReader(body.Bytes()))
			if err != nil {
				b.Fatal(err)
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := fmt.Sprintf(`{"summary":{"items":%d,"outcomes":{"ok":%d},"problems":0,"notRun":0,`, n, n)
			if resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(want)) {
				b.Fatalf("status %d: %.300s", resp.StatusCode, out)
			}
		}
		b.Run(fmt.Sprintf("%s/n=%d", w.name, n), func(b *testing.B) {
			send(b)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				send(b)
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "evals/s")
		})
	}
}
