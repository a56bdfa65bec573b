package client_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/client"
	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

func TestMain(m *testing.M) {
	code := m.Run()
	servicetest.Cleanup()
	os.Exit(code)
}

// capsDoc is the GET /v1/capabilities document as the service writes it:
// api/testdata's golden file, which the TypeScript client's tests read too.
var capsDoc = func() string {
	b, err := os.ReadFile("../api/testdata/capabilities/service.json")
	if err != nil {
		panic(err)
	}
	return strings.TrimSuffix(string(b), "\n")
}()

var wantCaps = spi.Capabilities{Language: "javascript", Network: spi.NetworkNone, WallClock: spi.WallClockHard,
	Memory: true, CPU: true, FreshPerRun: true}

// recorded is one request a fake service received.
type recorded struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// fake is a loopback service: GET /v1/capabilities answers capsDoc, and
// every other request is recorded and handed to route.
type fake struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

func newFake(t *testing.T, route http.HandlerFunc) *fake {
	t.Helper()
	return newFakeWithCaps(t, capsDoc, route)
}

// newFakeWithCaps is newFake whose GET /v1/capabilities answers caps.
func newFakeWithCaps(t *testing.T, caps string, route http.HandlerFunc) *fake {
	t.Helper()
	f := &fake{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method == http.MethodGet && r.URL.Path == "/v1/capabilities" {
			writeJSON(w, http.StatusOK, caps)
			return
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, recorded{r.Method, r.URL.Path, r.Header.Clone(), body})
		f.mu.Unlock()
		route(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fake) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

func dial(t *testing.T, url string, opts ...client.Option) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, url, opts...)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func writeProblem(w http.ResponseWriter, status int, detail string, extra string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	p := map[string]any{"type": "about:blank", "title": http.StatusText(status), "status": status, "detail": detail}
	b, _ := json.Marshal(p)
	if extra != "" {
		b = append(b[:len(b)-1], ","+extra+"}"...)
	}
	_, _ = w.Write(b)
}

var defaultLimits = spi.Limits{WallClock: 2 * time.Second, MemoryBytes: 32 << 20}

func evalT(t *testing.T, c *client.Client) spi.Outcome {
	t.Helper()
	return evalWithin(t, c, 20*time.Second)
}

// evalWithin is evalT with a bound of its own on the whole call.
func evalWithin(t *testing.T, c *client.Client, bound time.Duration) spi.Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	o, err := c.Evaluate(ctx, spi.Request{Script: "input", InputJSON: `{"a":1}`, Limits: defaultLimits})
	if err != nil {
		t.Fatalf("Evaluate returned an error: %v", err)
	}
	return o
}

// wantInfra requires an infrastructure outcome whose message holds every
// fragment.
func wantInfra(t *testing.T, o spi.Outcome, fragments ...string) {
	t.Helper()
	if o.OK || o.Kind != spi.KindInfrastructure || o.Message == "" {
		t.Fatalf("outcome %+v, want infrastructure", o)
	}
	for _, f := range fragments {
		if !strings.Contains(o.Message, f) {
			t.Errorf("infrastructure message %q lacks %q", o.Message, f)
		}
	}
	if n := len([]rune(o.Message)); n > spi.MaxMessageUnits {
		t.Errorf("message is %d runes, over %d", n, spi.MaxMessageUnits)
	}
}

func ptr[T any](v T) *T { return &v }

// goldenSHA is the engine hash in capsDoc.
const goldenSHA = "3da3d23368b5cc70dd37ba8e41af729b2e68142b5612cf80ddb80d8ad50c66ef"
