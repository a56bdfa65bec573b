package security

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	sandboxsvc "github.com/loom-plugins/sandbox-cloudrun/service"
	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"
	"github.com/loom-plugins/sandbox-cloudrun/worker"
)

// The in-process service is the binary's (service.New over the defaults of
// README.md): the real handler over a pool of real worker processes (this
// test binary, started with the worker verb), locked down as in production.
// A run the pool had to kill is counted, because no case of the shared
// service may ever be stuck (those are stuck_test.go's, which checks the
// kills themselves, at the production grace).
//
// The services here kill a run grace after its deadline, not the
// production 500 ms: a kill must mean that the run did not reach its
// interrupt handler, and on a loaded 2-core machine running the checked
// engine a worker that polls as it should can go unscheduled for more than
// half a second. Two seconds of not polling no load explains.
var (
	defaults      = sandboxsvc.Defaults()
	grace         = 2 * time.Second // HARD_KILL_GRACE of the services here
	serviceLimits = defaults.Limits()
)

// slack is what a shared, loaded 2-core CI machine may add to a response
// beyond the bound the service promises.
const slack = 1500 * time.Millisecond

// generous is the wall clock of a case whose outcome must not be the wall
// clock (a value, a throw, a stack overflow, the memory limit): long
// enough that no busy machine makes a run that ends by itself hit it, so
// that the outcome is the script's and never the machine's speed.
const generous = 20 * time.Second

// cacheDir holds wazero's compiled engine across the workers this package
// starts.
var cacheDir string

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == worker.Verb {
		if len(os.Args) > 2 && os.Args[2] == trapWorkerArg {
			os.Exit(trapWorker()) // a worker whose engine traps (TestEngineFaultIsAnAlarm)
		}
		os.Exit(worker.Main()) // this binary as the pool's worker
	}
	dir, err := os.MkdirTemp("", "security-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cacheDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	servicetest.Cleanup()
	os.Exit(code)
}

// service is the real handler over real workers, served over HTTP on
// loopback.
type service struct {
	url     string
	workers *worker.Pool
	store   *contentstore.MemStore
	logs    *servicetest.Logs // the service's JSON log lines
}

// stuck is how many runs the pool had to kill.
func (s *service) stuck() int64 { return s.workers.Kills() }

// newService starts a service; opts adjust its configuration (a small CPU
// budget, say) after the defaults.
func newService(opts ...func(*sandboxsvc.Config)) (*service, func()) {
	s := &service{logs: &servicetest.Logs{}}
	log := slog.New(slog.NewJSONHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg := sandboxsvc.Defaults()
	cfg.CompilationCacheDir = cacheDir
	cfg.HardKillGrace = grace
	for _, o := range opts {
		o(&cfg)
	}
	st, err := contentstore.NewMemStore(contentstore.Options{MaxScriptBytes: cfg.MaxScriptBytes, Logger: log})
	if err != nil {
		panic(err)
	}
	s.store = st
	svc, err := sandboxsvc.New(context.Background(), cfg, sandboxsvc.Options{Logger: log, Store: st})
	if err != nil {
		panic(err)
	}
	if err := svc.Warm(context.Background()); err != nil {
		panic(err)
	}
	s.workers = svc.Workers
	srv := httptest.NewServer(svc.Handler)
	s.url = srv.URL
	return s, func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		svc.Close(ctx)
	}
}

// shared is the service most tests use: production defaults (a CPU budget of
// seconds, so runaways end on their wall clock).
var (
	sharedOnce sync.Once
	sharedSvc  *service
)

func shared(t *testing.T) *service {
	t.Helper()
	sharedOnce.Do(func() { sharedSvc, _ = newService() })
	// A case that the shared service had to kill is not a case of this
	// test's kind: fail where it happened, and only there (the count is this
	// test's, so one such case does not fail every test after it).
	before := sharedSvc.stuck()
	t.Cleanup(func() {
		if n := sharedSvc.stuck() - before; n != 0 {
			t.Errorf("the shared service killed %d worker(s) for runs of this test that did not stop: a case that never reaches the interrupt handler belongs in stuck_test.go", n)
		}
	})
	return sharedSvc
}

// route is one of the two evaluation routes.
type route string

const (
	spiRoute    route = "/v1/sandbox/evaluate" // the backend SPI: the engine's outcome, exactly
	evaluations route = "/v1/evaluations"      // the effect: channels, bounds, shape
)

// req is one evaluation request.
type req struct {
	script   string
	input    string        // JSON text; "" is null
	wall     time.Duration // 0: the server's default
	memory   int64         // 0: the server's default
	logs     bool          // captureLogs (evaluations only)
	shape    string        // expectedOutputShapeHash (evaluations only)
	inputRaw bool          // send input as given even if not JSON (SPI only)
	// carry is what moving a large answer may add to the budget: once the
	// run has ended no deadline covers its answer, which crosses the
	// worker's frame, the handler and HTTP at the machine's speed.
	carry time.Duration
}

// result is what came back, reduced to one vocabulary for both routes.
type result struct {
	route  route
	status int
	body   string
	took   time.Duration
	err    error // transport: no response at all

	class   string  // ok, limit:<kind>, threw, inputTooLarge, infrastructure, shapeMismatch, problem:<status>
	value   string  // the value's JSON text (ok)
	name    *string // threw
	message string  // threw, infrastructure
	logs    *string // evaluations with captureLogs
	problem string  // the problem type's fragment
}

func (r result) String() string {
	if r.err != nil {
		return fmt.Sprintf("%s: transport error after %v: %v", r.route, r.took, r.err)
	}
	return fmt.Sprintf("%s: %d after %v: %.400s", r.route, r.status, r.took.Round(time.Millisecond), r.body)
}

// wallOf is the run's wall clock as the server applies it.
func (q req) wallOf() time.Duration {
	if q.wall == 0 {
		return serviceLimits.DefaultWallClock
	}
	return q.wall
}

// budget is the latest a response may arrive: the wall clock, the engine's
// hard-kill grace (a stuck run is answered then), CI slack, and the time a
// large answer may take to carry. An answer later than that is a hang.
func (q req) budget() time.Duration { return q.wallOf() + grace + slack + q.carry }

func (q req) body(rt route, ref string) []byte {
	m := map[string]any{}
	lim := map[string]any{}
	if q.wall != 0 {
		lim["wallClockMs"] = q.wall.Milliseconds()
	}
	if q.memory != 0 {
		lim["memoryBytes"] = q.memory
	}
	if len(lim) > 0 {
		m["limits"] = lim
	}
	in := q.input
	if in == "" {
		in = "null"
	}
	switch rt {
	case spiRoute:
		m["script"] = q.script
		m["inputJson"] = in
	case evaluations:
		m["scriptRef"] = ref
		if q.logs {
			m["captureLogs"] = true
		}
		if q.shape != "" {
			m["expectedOutputShapeHash"] = q.shape
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	if rt == evaluations {
		// The input goes in as its own text, whatever encoding/json would
		// think of it (it refuses nesting past 10000, say).
		b = append(append(append(b[:len(b)-1], `,"input":`...), in...), '}')
	}
	return b
}

// do sends one evaluation and decodes the answer. The client gives up well
// after the budget, so a hang shows as a failure, not a stuck test.
func (s *service) do(t *testing.T, rt route, q req) result {
	t.Helper()
	ref := ""
	if rt == evaluations {
		r, err := s.store.Put(context.Background(), []byte(q.script))
		if err != nil {
			t.Fatalf("store: %v", err)
		}
		ref = r.String()
	}
	return post(t, s.url, rt, q, ref)
}

func post(t *testing.T, base string, rt route, q req, ref string) result {
	t.Helper()
	client := &http.Client{Timeout: q.budget() + 10*time.Second}
	start := time.Now()
	resp, err := client.Post(base+string(rt), "application/json", bytes.NewReader(q.body(rt, ref)))
	res := result{route: rt}
	if err != nil {
		res.took, res.err, res.class = time.Since(start), err, "transport"
		return res
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	res.took = time.Since(start)
	res.status, res.body = resp.StatusCode, strings.TrimSpace(string(b))
	if err != nil {
		res.err, res.class = err, "transport"
		return res
	}
	res.decode(t)
	return res
}

func (r *result) decode(t *testing.T) {
	t.Helper()
	if r.status != http.StatusOK {
		r.class = fmt.Sprintf("problem:%d", r.status)
		var p struct{ Type string }
		_ = json.Unmarshal([]byte(r.body), &p)
		if i := strings.LastIndexByte(p.Type, '#'); i >= 0 {
			r.problem = p.Type[i+1:]
		}
		return
	}
	switch r.route {
	case spiRoute:
		var o struct {
			OK      bool            `json:"ok"`
			Value   json.RawMessage `json:"value"`
			Kind    string          `json:"kind"`
			Limit   string          `json:"limit"`
			Name    *string         `json:"name"`
			Message string          `json:"message"`
		}
		if err := json.Unmarshal([]byte(r.body), &o); err != nil {
			t.Fatalf("undecodable SPI answer: %v\n%.300s", err, r.body)
		}
		switch {
		case o.OK:
			r.class, r.value = "ok", string(o.Value)
		case o.Kind == "limit":
			r.class = "limit:" + o.Limit
		default:
			r.class, r.name, r.message = o.Kind, o.Name, o.Message
		}
	case evaluations:
		var o struct {
			OK      bool            `json:"ok"`
			Value   json.RawMessage `json:"value"`
			Logs    *string         `json:"logs"`
			Failure *struct {
				Channel string  `json:"channel"`
				Kind    string  `json:"kind"`
				Name    *string `json:"name"`
				Message string  `json:"message"`
			} `json:"failure"`
		}
		if err := json.Unmarshal([]byte(r.body), &o); err != nil {
			t.Fatalf("undecodable evaluation answer: %v\n%.300s", err, r.body)
		}
		r.logs = o.Logs
		switch {
		case o.OK:
			r.class, r.value = "ok", string(o.Value)
		case o.Failure == nil:
			t.Fatalf("an evaluation answer that is neither ok nor a failure: %.300s", r.body)
		case o.Failure.Channel == "limitExceeded":
			r.class = "limit:" + o.Failure.Kind
		case o.Failure.Channel == "scriptError":
			r.class, r.name, r.message = "threw", o.Failure.Name, o.Failure.Message
		default:
			r.class = o.Failure.Channel
		}
	}
}

// want is a case's expected outcome.
type want struct {
	class   string // as result.class; several may be given separated by "|"
	name    string // threw: the name ("-" for none); "" does not check
	message string // threw: a substring of the message; "" does not check
	value   string // ok: the exact JSON text; "" does not check
}

func (w want) String() string {
	s := w.class
	if w.name != "" {
		s += " " + w.name
	}
	if w.message != "" {
		s += fmt.Sprintf(" %q", w.message)
	}
	if w.value != "" {
		s += " " + w.value
	}
	return s
}

// check asserts the result is w, arrived within the request's budget, and
// is never a transport failure or a 5xx.
func check(t *testing.T, q req, r result, w want) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("no answer: %v", r)
	}
	if r.status >= 500 {
		t.Fatalf("a hostile script made the service answer %d: %v", r.status, r)
	}
	if r.took > q.budget() {
		t.Errorf("answered after %v, over the budget of %v (wall clock %v + grace %v + slack %v + carry %v)", r.took, q.budget(), q.wallOf(), grace, slack, q.carry)
	}
	ok := false
	for _, c := range strings.Split(w.class, "|") {
		ok = ok || c == r.class
	}
	if !ok {
		t.Fatalf("want %v, got %v", w, r)
	}
	if r.class == "threw" && w.name != "" {
		switch {
		case w.name == "-" && r.name != nil:
			t.Errorf("want no name, got %q: %v", *r.name, r)
		case w.name != "-" && (r.name == nil || *r.name != w.name):
			t.Errorf("want name %q: %v", w.name, r)
		}
	}
	if w.message != "" && !strings.Contains(r.message, w.message) {
		t.Errorf("want a message containing %q: %v", w.message, r)
	}
	if r.class == "ok" && w.value != "" && r.value != w.value {
		t.Errorf("want value %.200s: %v", w.value, r)
	}
}
