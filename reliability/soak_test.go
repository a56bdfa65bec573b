package reliability

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/internal/proctree"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// The soak's configuration of the service (beyond the defaults): a small CPU
// budget, so that the cpu limit is reached in a fraction of a second of a
// tight loop (the budget counts interrupt polls, one per 1,000 ticks;
// calibrateCPU checks the figure); and 64 KiB input and output caps, so that
// the inputTooLarge and output cases stay small.
const (
	soakCPUBudget = 40000
	soakMaxIO     = 64 << 10
)

// calibrateCPU checks that soakCPUBudget still ends a tight loop well after
// the mix's 15 ms wall clocks and well before its 10 s one.
func calibrateCPU(t *testing.T, url string) {
	t.Helper()
	once := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}} // no idle connection left in the baseline
	r, err := do(context.Background(), once, http.MethodPost, url+routeSandbox,
		`{"script":"while (true) {}","inputJson":"null","limits":{"wallClockMs":10000}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(r.body)) != `{"ok":false,"kind":"limit","limit":"cpu"}` || r.took < 50*time.Millisecond || r.took > 5*time.Second {
		t.Fatalf("CPU_BUDGET=%d ended a tight loop with %s after %v; want the cpu limit in 50 ms to 5 s: recalibrate soakCPUBudget", soakCPUBudget, r, r.took)
	}
	t.Logf("CPU_BUDGET=%d: a tight loop reaches the cpu limit in %v", soakCPUBudget, r.took.Round(time.Millisecond))
}

// soakGrace is the hard-kill grace of the soak's service: 2 s instead of
// 0.5 s. The shared test machine can starve the process for more than half a
// second (at load average 9 to 10 on 2 cores a 40 ms run was answered 544 ms
// past its deadline), and then the pool kills the run's worker and answers
// wallClock, as designed, whatever the run's own answer would have been; the
// soak is about everything else.
const soakGrace = 2 * time.Second

var soakEnv = []string{
	"HARD_KILL_GRACE=" + soakGrace.String(),
	"CPU_BUDGET=" + strconv.Itoa(soakCPUBudget),
	"MAX_INPUT_BYTES=" + strconv.Itoa(soakMaxIO),
	"MAX_OUTPUT_BYTES=" + strconv.Itoa(soakMaxIO),
}

// soakN is how many evaluations each soak phase runs: SOAK_N, else 1,000
// (the CI setting), or 200 with -short.
func soakN(t *testing.T) int {
	if s := os.Getenv("SOAK_N"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 100 {
			t.Fatalf("SOAK_N=%q: want an integer >= 100", s)
		}
		return n
	}
	if testing.Short() {
		return 200
	}
	return 1000
}

// soakScripts are the stored scripts of the mix.
var soakScripts = map[string]string{
	"reshape": `({ count: input.items.length, open: input.items.filter(i => i.open).map(i => ({ id: i.id, title: i.title.toUpperCase() })) })`,
	"logs":    `console.log("n is", input.n); console.error("and twice", input.n * 2); input.n + 1`,
	"throw":   `throw new TypeError("bad input " + input.n)`,
	"syntax":  `let = ;`,
	"runaway": `while (true) {}`,
	"bomb":    `let a = []; for (;;) a.push("x".repeat(65536) + a.length)`,
	"output":  `"y".repeat(input.n)`,
	"length":  `JSON.stringify(input).length`,
	"recurse": `function f(n) { return f(n + 1) + 1 } f(0)`,
	"regexp":  `/(a+)+$/.test("a".repeat(input.n) + "b")`,
}

// soakCase is one kind of request in the mix, with the answer it must get.
type soakCase struct {
	name   string
	weight int
	route  string
	body   func(seq int) string
	want   func(seq int) (status int, body string) // body "" for a problem: then slug
	slug   string
}

func reshapeInput(seq int) (input, value string) {
	var in, out []string
	for i := 1; i <= 12; i++ {
		open := (i+seq)%3 != 0
		in = append(in, fmt.Sprintf(`{"id":%d,"title":"issue %d of %d","open":%t,"labels":["l%d"]}`, i, i, seq, open, i%4))
		if open {
			out = append(out, fmt.Sprintf(`{"id":%d,"title":"ISSUE %d OF %d"}`, i, i, seq))
		}
	}
	return `{"items":[` + strings.Join(in, ",") + `]}`, `{"count":12,"open":[` + strings.Join(out, ",") + `]}`
}

func soakCases(t testing.TB, refs map[string]string) []soakCase {
	_, v := reshapeInput(0)
	shape, err := spi.ShapeHash([]byte(v))
	if err != nil {
		t.Fatal(err)
	}
	wrongShape := "sha256:" + strings.Repeat("ab", 32)
	ok := func(value string) (int, string) { return 200, `{"ok":true,"value":` + value + `}` }
	failure := func(f string) (int, string) { return 200, `{"ok":false,"failure":` + f + `}` }
	ref := func(name string) string { return refs[name] }
	big := `"` + strings.Repeat("z", soakMaxIO) + `"`
	// an input within MAX_INPUT_BYTES that the engine cannot parse within
	// the least memory a request may ask (quickjs.MinMemoryBytes): 60 KB of
	// empty objects are over a MiB parsed
	engineTooBig := "[" + strings.Repeat("{},", 20000) + "{}]"

	return []soakCase{
		// /v1/evaluations: every outcome kind
		{name: "ok reshape, shape pinned", weight: 18, route: routeEvaluations,
			body: func(seq int) string {
				in, _ := reshapeInput(seq)
				return `{"scriptRef":"` + ref("reshape") + `","input":` + in + `,"expectedOutputShapeHash":"` + shape + `"}`
			},
			want: func(seq int) (int, string) { _, v := reshapeInput(seq); return ok(v) }},
		{name: "ok with logs", weight: 5, route: routeEvaluations,
			body: func(seq int) string {
				return fmt.Sprintf(`{"scriptRef":"%s","input":{"n":%d},"captureLogs":true}`, ref("logs"), seq)
			},
			want: func(seq int) (int, string) {
				return 200, fmt.Sprintf(`{"ok":true,"value":%d,"logs":"n is %d\n[error] and twice %d\n"}`, seq+1, seq, 2*seq)
			}},
		{name: "shapeMismatch", weight: 7, route: routeEvaluations,
			body: func(seq int) string {
				in, _ := reshapeInput(seq)
				return `{"scriptRef":"` + ref("reshape") + `","input":` + in + `,"expectedOutputShapeHash":"` + wrongShape + `"}`
			},
			want: func(int) (int, string) {
				return failure(`{"channel":"shapeMismatch","expected":"` + wrongShape + `","observed":"` + shape + `"}`)
			}},
		{name: "scriptMissing", weight: 5, route: routeEvaluations,
			body: func(seq int) string { return `{"scriptRef":"` + missingRefN(seq) + `"}` },
			want: func(seq int) (int, string) {
				return failure(`{"channel":"scriptMissing","scriptRef":"` + missingRefN(seq) + `"}`)
			}},
		{name: "scriptError: throw", weight: 7, route: routeEvaluations,
			body: func(seq int) string { return fmt.Sprintf(`{"scriptRef":"%s","input":{"n":%d}}`, ref("throw"), seq) },
			want: func(seq int) (int, string) {
				return failure(fmt.Sprintf(`{"channel":"scriptError","name":"TypeError","message":"bad input %d"}`, seq))
			}},
		{name: "scriptError: syntax", weight: 4, route: routeEvaluations,
			body: func(int) string { return `{"scriptRef":"` + ref("syntax") + `"}` },
			want: func(int) (int, string) {
				return failure(`{"channel":"scriptError","name":"SyntaxError","message":"unexpected token in expression: ';'"}`)
			}},
		{name: "scriptError: stack overflow", weight: 2, route: routeEvaluations,
			body: func(int) string { return `{"scriptRef":"` + ref("recurse") + `"}` },
			want: func(int) (int, string) {
				return failure(`{"channel":"scriptError","name":"InternalError","message":"stack overflow"}`)
			}},
		{name: "limitExceeded: wallClock (runaway, 15 ms)", weight: 6, route: routeEvaluations,
			body: func(int) string { return `{"scriptRef":"` + ref("runaway") + `","limits":{"wallClockMs":15}}` },
			want: func(int) (int, string) { return failure(`{"channel":"limitExceeded","kind":"wallClock"}`) }},
		{name: "limitExceeded: wallClock (regexp backtracking, 40 ms)", weight: 2, route: routeEvaluations,
			body: func(int) string {
				return `{"scriptRef":"` + ref("regexp") + `","input":{"n":40},"limits":{"wallClockMs":40}}`
			},
			want: func(int) (int, string) { return failure(`{"channel":"limitExceeded","kind":"wallClock"}`) }},
		{name: "limitExceeded: cpu", weight: 3, route: routeEvaluations,
			body: func(int) string { return `{"scriptRef":"` + ref("runaway") + `","limits":{"wallClockMs":10000}}` },
			want: func(int) (int, string) { return failure(`{"channel":"limitExceeded","kind":"cpu"}`) }},
		{name: "limitExceeded: memory (allocation bomb, 8 MiB)", weight: 5, route: routeEvaluations,
			body: func(int) string { return `{"scriptRef":"` + ref("bomb") + `","limits":{"memoryBytes":8388608}}` },
			want: func(int) (int, string) { return failure(`{"channel":"limitExceeded","kind":"memory"}`) }},
		{name: "limitExceeded: output", weight: 3, route: routeEvaluations,
			body: func(int) string { return fmt.Sprintf(`{"scriptRef":"%s","input":{"n":%d}}`, ref("output"), soakMaxIO) },
			want: func(int) (int, string) { return failure(`{"channel":"limitExceeded","kind":"output"}`) }},
		{name: "inputTooLarge (the effect's bound)", weight: 2, route: routeEvaluations,
			body: func(int) string { return `{"scriptRef":"` + ref("length") + `","input":` + big + `}` },
			want: func(int) (int, string) {
				return failure(fmt.Sprintf(`{"channel":"inputTooLarge","limitBytes":%d}`, soakMaxIO))
			}},
		{name: "bad request: malformed JSON", weight: 2, route: routeEvaluations,
			body: func(seq int) string { return fmt.Sprintf(`{"scriptRef":"%s","input":{"n":%d,}}`, ref("length"), seq) },
			slug: "malformed-json", want: func(int) (int, string) { return 400, "" }},

		// /v1/sandbox/evaluate: the outcomes of docs/spi.md, "Outcomes"
		{name: "SPI ok by value", weight: 8, route: routeSandbox,
			body: func(seq int) string {
				return fmt.Sprintf(`{"script":"input.a * input.b","inputJson":"{\"a\":%d,\"b\":3}"}`, seq)
			},
			want: func(seq int) (int, string) { return ok(strconv.Itoa(3 * seq)) }},
		{name: "SPI ok reshape by reference", weight: 5, route: routeSandbox,
			body: func(seq int) string {
				in, _ := reshapeInput(seq)
				return `{"scriptRef":"` + ref("reshape") + `","inputJson":` + jsonString(in) + `}`
			},
			want: func(seq int) (int, string) { _, v := reshapeInput(seq); return ok(v) }},
		{name: "SPI threw", weight: 4, route: routeSandbox,
			body: func(seq int) string {
				return fmt.Sprintf(`{"script":"throw new RangeError('r' + input)","inputJson":"%d"}`, seq)
			},
			want: func(seq int) (int, string) {
				return 200, fmt.Sprintf(`{"ok":false,"kind":"threw","name":"RangeError","message":"r%d"}`, seq)
			}},
		{name: "SPI limit wallClock", weight: 3, route: routeSandbox,
			body: func(int) string {
				return `{"script":"while (true) {}","inputJson":"null","limits":{"wallClockMs":15}}`
			},
			want: func(int) (int, string) { return 200, `{"ok":false,"kind":"limit","limit":"wallClock"}` }},
		{name: "SPI limit memory", weight: 3, route: routeSandbox,
			body: func(int) string {
				return `{"scriptRef":"` + ref("bomb") + `","inputJson":"null","limits":{"memoryBytes":8388608}}`
			},
			want: func(int) (int, string) { return 200, `{"ok":false,"kind":"limit","limit":"memory"}` }},
		{name: "SPI inputTooLarge (the engine's memory)", weight: 2, route: routeSandbox,
			body: func(int) string {
				return `{"script":"input.length","inputJson":"` + engineTooBig + `","limits":{"memoryBytes":` + strconv.Itoa(quickjs.MinMemoryBytes) + `}}`
			},
			want: func(int) (int, string) { return 200, `{"ok":false,"kind":"inputTooLarge"}` }},
		{name: "SPI script-not-found", weight: 1, route: routeSandbox,
			body: func(seq int) string { return `{"scriptRef":"` + missingRefN(seq) + `","inputJson":"null"}` },
			slug: "script-not-found", want: func(int) (int, string) { return 404, "" }},
		{name: "SPI input over maxInputBytes", weight: 1, route: routeSandbox,
			body: func(int) string { return `{"script":"1","inputJson":` + jsonString(big) + `}` },
			want: func(int) (int, string) { return 200, `{"ok":false,"kind":"inputTooLarge"}` }},
	}
}

// everyCase is a plan that sends each case k times in turn.
func everyCase(cases []soakCase, k int) []int {
	var plan []int
	for range k {
		for i := range cases {
			plan = append(plan, i)
		}
	}
	return plan
}

func missingRefN(seq int) string { return fmt.Sprintf("sha256:%064x", 0xdead0000+seq) }

// schedule picks n cases by weight with a fixed seed, so every run sends the
// same mix.
func schedule(cases []soakCase, n int, seed uint64) []int {
	total := 0
	for _, c := range cases {
		total += c.weight
	}
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	out := make([]int, n)
	for i := range out {
		x := r.IntN(total)
		for j, c := range cases {
			if x < c.weight {
				out[i] = j
				break
			}
			x -= c.weight
		}
	}
	return out
}

// attempt is one request as the client saw it.
type attempt struct {
	start, end time.Time
	busy       bool
}

// soakStats is what one phase measured.
type soakStats struct {
	n, busy     int
	elapsed     time.Duration
	latencies   []time.Duration // of the answered (non-429) requests
	perCase     []int
	admitted    []attempt
	refused     []attempt
	badBusy     int // 429s with fewer than limit admitted requests around them
	maxInFlight int64
}

func (s soakStats) pct(p float64) time.Duration {
	if len(s.latencies) == 0 {
		return 0
	}
	l := slices.Clone(s.latencies)
	slices.Sort(l)
	return l[min(len(l)-1, int(p*float64(len(l))))]
}

func (s soakStats) String() string {
	return fmt.Sprintf("%d evaluations in %v (%.0f/s), latency p50 %v p99 %v max %v, %d × 429",
		s.n, s.elapsed.Round(time.Millisecond), float64(s.n)/s.elapsed.Seconds(),
		s.pct(0.50).Round(100*time.Microsecond), s.pct(0.99).Round(100*time.Microsecond), s.pct(1).Round(time.Millisecond), s.busy)
}

// runSoak sends n evaluations of the mix from clients concurrent clients to
// url, each retrying a 429 after a short pause until it gets its answer, and
// checks every answer: status, exact body (or problem type), and against
// api/openapi.yaml. limit is the server's MaxConcurrent.
func runSoak(t *testing.T, url string, cases []soakCase, plan []int, clients, limit int) soakStats {
	t.Helper()
	n := len(plan)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	defer hc.CloseIdleConnections()
	st := soakStats{n: n, perCase: make([]int, len(cases))}
	var (
		mu       sync.Mutex
		next     atomic.Int64
		inFlight atomic.Int64
		failures atomic.Int32
		wg       sync.WaitGroup
	)
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || failures.Load() > 5 {
					return
				}
				c := cases[plan[i]]
				body := c.body(i)
				for {
					f := inFlight.Add(1)
					a := attempt{start: time.Now()}
					r, err := do(context.Background(), hc, http.MethodPost, url+c.route, body, nil)
					a.end = time.Now()
					inFlight.Add(-1)
					if err != nil {
						failures.Add(1)
						t.Errorf("#%d %s: %v", i, c.name, err)
						break
					}
					mu.Lock()
					st.maxInFlight = max(st.maxInFlight, f)
					if r.status == http.StatusTooManyRequests {
						a.busy = true
						st.busy++
						st.refused = append(st.refused, a)
						mu.Unlock()
						if err := checkBusy(r, limit); err != nil {
							failures.Add(1)
							t.Errorf("#%d %s: %v", i, c.name, err)
							break
						}
						time.Sleep(time.Duration(1+rand.IntN(3)) * time.Millisecond)
						continue
					}
					st.admitted = append(st.admitted, a)
					st.latencies = append(st.latencies, r.took)
					st.perCase[plan[i]]++
					mu.Unlock()
					if err := checkSoakAnswer(c, i, r); err != nil {
						failures.Add(1)
						t.Errorf("#%d %s: %v", i, c.name, err)
					}
					break
				}
			}
		}()
	}
	wg.Wait()
	st.elapsed = time.Since(start)
	if clients == 1 && st.busy > 0 {
		t.Errorf("%d × 429 with one client in sequence: the gate refused a request when nothing else ran", st.busy)
	}
	st.badBusy = unjustifiedBusy(st.admitted, st.refused, limit)
	if st.badBusy > 0 {
		t.Errorf("%d of %d 429s came with fewer than %d admitted requests in flight around them", st.badBusy, st.busy, limit)
	}
	for i, c := range cases {
		if st.perCase[i] == 0 && n >= 1000 {
			t.Errorf("the mix never sent %q", c.name)
		}
	}
	return st
}

func checkBusy(r response, limit int) error {
	p, err := asProblem(r)
	if err != nil {
		return err
	}
	if p.slug() != "busy" || p["retryable"] != true || p["limit"] != "maxConcurrent" || p["limitValue"] != float64(limit) || r.header.Get("Retry-After") == "" {
		return fmt.Errorf("429 is not the busy problem for maxConcurrent %d: %s", limit, r)
	}
	return nil
}

func checkSoakAnswer(c soakCase, seq int, r response) error {
	status, body := c.want(seq)
	if err := validResponse(http.MethodPost, c.route, r); err != nil {
		return err
	}
	if r.status != status {
		return fmt.Errorf("status %d, want %d: %s", r.status, status, r)
	}
	if body == "" {
		p, err := asProblem(r)
		if err != nil {
			return err
		}
		if p.slug() != c.slug {
			return fmt.Errorf("problem %s, want %s: %s", p.slug(), c.slug, r)
		}
		return nil
	}
	if got := strings.TrimSuffix(string(r.body), "\n"); got != body {
		return fmt.Errorf("got  %s\nwant %s", tail(got, 400), tail(body, 400))
	}
	return nil
}

// unjustifiedBusy counts the 429s around which (from the client's side,
// with 250 ms of slack for the gate's release after the response is sent)
// fewer than limit admitted requests were in flight.
func unjustifiedBusy(admitted, refused []attempt, limit int) int {
	const slack = 250 * time.Millisecond
	sort.Slice(admitted, func(i, j int) bool { return admitted[i].start.Before(admitted[j].start) })
	var longest time.Duration
	for _, a := range admitted {
		longest = max(longest, a.end.Sub(a.start))
	}
	bad := 0
	for _, b := range refused {
		hi := sort.Search(len(admitted), func(i int) bool { return !admitted[i].start.Before(b.end) })
		n := 0
		for i := hi - 1; i >= 0 && admitted[i].start.After(b.start.Add(-longest-slack)); i-- {
			if admitted[i].end.Add(slack).After(b.start) {
				n++
			}
		}
		if n < limit {
			bad++
		}
	}
	return bad
}

// resources are a child's figures from /proc: the server and its worker
// processes together (guests, their memory and the workers' descriptors
// are in the workers), and the server's own.
type resources struct {
	rssKiB  int64 // the tree's
	fds     int
	threads int64
	procs   int
	server  proctree.Proc
}

func (r resources) String() string {
	return fmt.Sprintf("RSS %.1f MiB, %d fds, %d threads over %d processes (the server: RSS %.1f MiB, %d fds, %d threads)",
		float64(r.rssKiB)/1024, r.fds, r.threads, r.procs, float64(r.server.RSSKiB)/1024, r.server.FDs, r.server.Threads)
}

// readTree sums the figures of pid and its descendants.
func readTree(pid int) (resources, error) {
	procs, err := proctree.Tree(pid)
	if err != nil {
		return resources{}, err
	}
	r := resources{procs: len(procs), server: procs[0]}
	for _, p := range procs {
		r.rssKiB += p.RSSKiB
		r.fds += p.FDs
		r.threads += p.Threads
	}
	return r, nil
}

func sample(t *testing.T, pid int) resources {
	t.Helper()
	r, err := readTree(pid)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// sampler records a child's resources every interval until stopped.
func sampler(t *testing.T, pid int, every time.Duration) (stop func() []resources) {
	var (
		mu  sync.Mutex
		out []resources
	)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				if r, err := readTree(pid); err == nil {
					mu.Lock()
					out = append(out, r)
					mu.Unlock()
				}
			}
		}
	}()
	return func() []resources {
		close(done)
		<-finished
		mu.Lock()
		defer mu.Unlock()
		return out
	}
}

// settle waits until the child's process tree has settled, its
// descriptors back to at most fds (connections closing) and its RSS moving
// by less than a MiB over a quarter of a second (a worker unmaps a large
// guest's memory after the run's answer), for at most 10 s, and returns
// its resources then.
func settle(t *testing.T, pid, fds int) resources {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	prev := sample(t, pid)
	for {
		time.Sleep(250 * time.Millisecond)
		r := sample(t, pid)
		steady := r.procs == prev.procs && r.rssKiB-prev.rssKiB < 1<<10 && prev.rssKiB-r.rssKiB < 1<<10
		if (r.fds <= fds && steady) || time.Now().After(deadline) {
			return r
		}
		prev = r
	}
}

// Tolerances of the resource checks.
const (
	// The tree's RSS may grow this much from the second quarter of the
	// samples to the last.
	rssGrowthKiB = 48 << 10
	// Each process's share of how far the tree's RSS may end above its
	// baseline. A worker's first run of some kinds (a deep recursion, a
	// large value) leaves it keeping a few tens of MiB of heap for the
	// next, and the warm-up does not reach every worker with each kind.
	rssSlackPerProcessKiB = 32 << 10
	fdSlack               = 2 // file descriptors
)

// checkGrowth compares the mean RSS of the last quarter of samples with the
// second quarter's: a leak of a few KiB per evaluation over thousands shows
// there; the first quarter is left out as warm-up.
func checkGrowth(t *testing.T, samples []resources) (q2, q4 int64) {
	t.Helper()
	if len(samples) < 8 {
		return 0, 0
	}
	mean := func(s []resources) int64 {
		var sum int64
		for _, r := range s {
			sum += r.rssKiB
		}
		return sum / int64(len(s))
	}
	q := len(samples) / 4
	q2, q4 = mean(samples[q:2*q]), mean(samples[3*q:])
	if q4 > q2+rssGrowthKiB {
		t.Errorf("RSS grew across the run: %.1f MiB mean in the second quarter, %.1f MiB in the last", float64(q2)/1024, float64(q4)/1024)
	}
	return q2, q4
}

// putSoakScripts stores the mix's scripts in dir and returns their refs.
func putSoakScripts(t *testing.T, dir string) map[string]string {
	t.Helper()
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range soakScripts {
			if !yield(k) {
				return
			}
		}
	})
	srcs := make([]string, len(names))
	for i, k := range names {
		srcs[i] = soakScripts[k]
	}
	refs := map[string]string{}
	for i, r := range putScripts(t, dir, 1<<20, srcs...) {
		refs[names[i]] = r
	}
	return refs
}

// soakChild runs the mix against the binary: a warm-up, then each phase
// (clients per phase), sampling the child's RSS and descriptors; it checks
// that they come back to the baseline and do not grow, and reports the
// figures.
func soakChild(t *testing.T, maxConcurrent int, phases []int, extraEnv ...string) {
	store := t.TempDir()
	refs := putSoakScripts(t, store)
	env := append([]string{"STORE_URL=" + store, "MAX_CONCURRENT_EVALUATIONS=" + strconv.Itoa(maxConcurrent)}, soakEnv...)
	c := startChild(t, startOpts{env: append(env, extraEnv...)})
	cases := soakCases(t, refs)
	n := soakN(t)
	pid := c.Pid()

	calibrateCPU(t, c.URL)
	// warm-up: every case a few times, untimed
	runSoak(t, c.URL, cases, everyCase(cases, 5), 1, maxConcurrent)
	c.client.CloseIdleConnections()
	time.Sleep(300 * time.Millisecond)
	base := settle(t, pid, math.MaxInt)
	t.Logf("baseline after warm-up: %v", base)

	stop := sampler(t, pid, 200*time.Millisecond)
	for i, clients := range phases {
		st := runSoak(t, c.URL, cases, schedule(cases, n, uint64(100+i)), clients, maxConcurrent)
		t.Logf("%d client(s), MAX_CONCURRENT_EVALUATIONS=%d: %v", clients, maxConcurrent, st)
		if t.Failed() {
			return
		}
	}
	samples := stop()
	after := settle(t, pid, base.fds)
	var peak resources
	for _, s := range samples {
		peak.rssKiB, peak.fds, peak.procs = max(peak.rssKiB, s.rssKiB), max(peak.fds, s.fds), max(peak.procs, s.procs)
	}
	q2, q4 := checkGrowth(t, samples)
	t.Logf("after: %v; peak during the run: RSS %.1f MiB, %d fds, %d processes; RSS mean 2nd quarter %.1f MiB, last quarter %.1f MiB (%d samples)",
		after, float64(peak.rssKiB)/1024, peak.fds, peak.procs, float64(q2)/1024, float64(q4)/1024, len(samples))
	if after.fds > base.fds+fdSlack {
		t.Errorf("file descriptors: %d after, %d at the baseline", after.fds, base.fds)
	}
	if after.rssKiB > base.rssKiB+rssSlackPerProcessKiB*int64(base.procs) {
		t.Errorf("RSS: %.1f MiB after, %.1f MiB at the baseline", float64(after.rssKiB)/1024, float64(base.rssKiB)/1024)
	}
	if after.threads > base.threads+4*int64(base.procs) {
		t.Errorf("threads: %d after, %d at the baseline", after.threads, base.threads)
	}
	if after.procs != base.procs {
		t.Errorf("processes: %d after, %d at the baseline (the server and its workers)", after.procs, base.procs)
	}
	if kills := hardKills(c.Logs); len(kills) > 0 {
		t.Errorf("a run was stuck in native code and its worker killed: %v", kills)
	}
	// the gate is whole: one request at a time is never refused
	st := runSoak(t, c.URL, cases, everyCase(cases, 2), 1, maxConcurrent)
	if st.busy > 0 {
		t.Errorf("after the run, %d × 429 in sequence", st.busy)
	}
}

// The mix in sequence, then from 4 clients, against the binary as deployed
// (one evaluation at a time, the process kill armed).
func TestSoakBinaryOneAtATime(t *testing.T) {
	soakChild(t, 1, []int{1, 4})
}

// 4 clients against MAX_CONCURRENT_EVALUATIONS=2, the process kill armed
// in each worker as deployed.
func TestSoakBinaryTwoAtATime(t *testing.T) {
	soakChild(t, 2, []int{4})
}

// The same mix in-process, to count goroutines: 4 clients against
// MaxConcurrent 2; the goroutines come back to their baseline. With the
// engine in this process and with the worker pool (whose goroutines, a
// reader, a waiter and a log relay per worker, are the server's).
func TestSoakInProcessGoroutines(t *testing.T) {
	t.Run("engine in process", func(t *testing.T) { soakInProcess(t, false) })
	t.Run("worker pool", func(t *testing.T) { soakInProcess(t, true) })
}

func soakInProcess(t *testing.T, workers bool) {
	s := newInproc(t, inprocConfig{workers: workers, maxConcurrent: 2, cpuBudget: soakCPUBudget, grace: soakGrace, limits: func() *api.Limits {
		l := defaultLimits()
		l.MaxInputBytes, l.MaxOutputBytes = soakMaxIO, soakMaxIO
		return &l
	}()})
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range soakScripts {
			if !yield(k) {
				return
			}
		}
	})
	refs := map[string]string{}
	for _, k := range names {
		refs[k] = s.put(t, soakScripts[k])[0]
	}
	cases := soakCases(t, refs)
	n := soakN(t) / 2
	calibrateCPU(t, s.url)
	runSoak(t, s.url, cases, everyCase(cases, 3), 1, 2)
	time.Sleep(300 * time.Millisecond) // the warm-up's connections close
	base := runtime.NumGoroutine()
	heapBefore, logsBefore := liveHeap(), len(s.logs.String())
	var peak atomic.Int64
	stopPeak := make(chan struct{})
	go func() {
		for {
			select {
			case <-stopPeak:
				return
			case <-time.After(50 * time.Millisecond):
				g := int64(runtime.NumGoroutine())
				for p := peak.Load(); g > p && !peak.CompareAndSwap(p, g); p = peak.Load() {
				}
			}
		}
	}()
	st := runSoak(t, s.url, cases, schedule(cases, n, 200), 4, 2)
	close(stopPeak)
	after := goroutinesSettle(base+3, 5*time.Second)
	t.Logf("in-process, 4 clients, MaxConcurrent 2, workers %v: %v; goroutines %d before, peak %d, %d after", workers, st, base, peak.Load(), after)
	if after > base+3 {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d after, %d before\n%s", after, base, buf[:runtime.Stack(buf, true)])
	}
	// the live heap (after a collection) comes back too, allowing for the
	// log lines this test keeps in memory
	heapAfter, logsGrowth := liveHeap(), uint64(len(s.logs.String())-logsBefore)
	t.Logf("live Go heap %.1f MiB before, %.1f MiB after (of which %.1f MiB are the server's log lines, kept by the test)",
		float64(heapBefore)/(1<<20), float64(heapAfter)/(1<<20), float64(logsGrowth)/(1<<20))
	if heapAfter > heapBefore+logsGrowth*2+16<<20 {
		t.Errorf("live heap grew from %.1f MiB to %.1f MiB", float64(heapBefore)/(1<<20), float64(heapAfter)/(1<<20))
	}
}

// liveHeap is the Go heap after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
