package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"reflect"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/client"
	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// laterVersion puts a loopback proxy in front of the service at target
// that answers as a later version of it would (docs/spi.md, "How the wire
// evolves"): every evaluation's answer gains a usage figure, a phase and a
// report member that this client does not know. It returns the proxy's URL
// and the number of answers it changed.
func laterVersion(t *testing.T, target string) (string, *atomic.Int64) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	var changed atomic.Int64
	p := httputil.NewSingleHostReverseProxy(u)
	p.ModifyResponse = func(r *http.Response) error {
		if r.Request.Method != http.MethodPost || r.StatusCode != http.StatusOK {
			return nil
		}
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return err
		}
		later := bytes.Replace(body, []byte(`"usage":{"phasesMs":{`), []byte(`"usage":{"gpuMs":0.5,"phasesMs":{"queue":1.25,`), 1)
		later = bytes.Replace(later, []byte(`"memoryLimitBytes":`), []byte(`"heapObjects":[1,2],"memoryLimitBytes":`), 1)
		later = append(bytes.TrimSuffix(bytes.TrimSuffix(later, []byte("\n")), []byte("}")), `,"trace":{"spans":[{"name":"run"}]},"warnings":[]}`...)
		if !bytes.Equal(later, body) && json.Valid(later) {
			changed.Add(1)
		}
		r.Body = io.NopCloser(bytes.NewReader(later))
		r.ContentLength = int64(len(later))
		r.Header.Set("Content-Length", strconv.Itoa(len(later)))
		return nil
	}
	s := httptest.NewServer(p)
	t.Cleanup(s.Close)
	return s.URL, &changed
}

// Today's client reads the answers of a later version of the service, one
// with a usage figure, a phase and report members it does not know: it
// keeps the typed outcome, the console and the usage figures it knows, on
// both routes. Were it to refuse them, every run would be infrastructure,
// which loom retries.
func TestAnswersOfALaterVersionKeepTheirOutcome(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the service")
	}
	store := t.TempDir()
	thrower := putScript(t, store, `throw new TypeError("no " + input.a)`)
	s := servicetest.Start(t, servicetest.Options{Env: []string{"STORE_URL=" + store}})
	proxy, changed := laterVersion(t, s.URL)
	c := dial(t, proxy)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	limits := spi.Limits{WallClock: 500 * time.Millisecond, MemoryBytes: 16 << 20}

	for _, tc := range []struct {
		name, script string
		want         spi.Outcome
		logs         string
	}{
		{"a value", `console.log("a is", input.a); input.a + 1`, spi.OK([]byte("2")), "a is 1\n"},
		{"the script's exception", `console.warn("about to"); null.x`,
			spi.Threw(ptr("TypeError"), "cannot read property 'x' of null"), "[warn] about to\n"},
		{"a limit", `for (;;) {}`, spi.LimitHit(spi.LimitWallClock), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := c.Run(ctx, spi.RunRequest{Request: spi.Request{Script: tc.script, InputJSON: `{"a":1}`, Limits: limits}, CaptureLogs: true})
			if err != nil {
				t.Fatalf("Run returned an error: %v", err)
			}
			if !reflect.DeepEqual(rep.Outcome, tc.want) {
				t.Fatalf("outcome %+v (value %s), want %+v (value %s)", rep.Outcome, rep.Outcome.Value, tc.want, tc.want.Value)
			}
			if rep.Logs != tc.logs || rep.Usage.MemoryLimitBytes != limits.MemoryBytes || rep.Usage.CPUBudget == 0 || rep.RequestID == "" {
				t.Errorf("logs %q, usage %+v, request id %q: want the console, the figures this client knows and the id", rep.Logs, rep.Usage, rep.RequestID)
			}
		})
	}

	r, err := c.Evaluations(ctx, client.EvaluationRequest{ScriptRef: thrower, Input: json.RawMessage(`{"a":1}`), CaptureLogs: true, Limits: &limits})
	want := &spi.Failure{Channel: spi.ChannelScriptError, Name: ptr("TypeError"), Message: "no 1"}
	if err != nil || !reflect.DeepEqual(r.Failure, want) || r.Usage == nil || r.Usage.MemoryLimitBytes != limits.MemoryBytes {
		t.Errorf("Evaluations = %+v (failure %+v), %v; want %+v with its usage", r, r.Failure, err, want)
	}
	if n := changed.Load(); n != 4 {
		t.Errorf("the proxy made %d answers of a later version, want 4", n)
	}
}
