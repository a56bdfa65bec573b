package security

import (
	"strings"
	"testing"
	"time"
)

// Promise jobs through the service, on both routes: after the global code
// the engine runs the job queue until no job is left, under the run's
// limits, and a Promise result is its settled value. Cases whose outcome
// must not be the wall clock have a generous one.
func TestPromiseJobsThroughTheService(t *testing.T) {
	s := shared(t)
	neverSettled := want{class: "threw", name: "-", message: "the result is a promise that never settled"}
	cases := []struct {
		name, script, input string
		wall                time.Duration
		memory              int64
		want                want
	}{
		{name: "await of a resolved value", script: `(async () => await Promise.resolve(input.n + 1))()`, input: `{"n":41}`, want: want{class: "ok", value: `42`}},
		{name: "Promise.all over 1,000 elements", script: `Promise.all(Array.from({ length: 1000 }, (_, i) => (async () => i)())).then(a => a.length)`, want: want{class: "ok", value: `1000`}},
		{name: "a chain of 10,000 thens", script: `let p = Promise.resolve(0); for (let i = 0; i < 10000; i++) p = p.then(x => x + 1); p`, want: want{class: "ok", value: `10000`}},
		{name: "a rejected promise", script: `Promise.reject(new RangeError("rejected"))`, want: want{class: "threw", name: "RangeError", message: "rejected"}},
		{name: "a throw in an async function", script: `(async () => { await null; throw new TypeError("in async") })()`, want: want{class: "threw", name: "TypeError", message: "in async"}},
		{name: "a promise that never settles", script: `new Promise(() => {})`, want: neverSettled},
		{name: "a job that loops forever", script: `Promise.resolve().then(() => { for (;;) {} }); "unreached"`, wall: runaway, want: wallClock},
		{name: "a job that allocates without bound", script: `Promise.resolve().then(() => { const a = []; for (;;) a.push(new Array(1e4).fill(a.length)) }); "unreached"`, memory: small, want: memory},
		{name: "queueMicrotask is not defined", script: `queueMicrotask(() => {})`, want: want{class: "threw", name: "ReferenceError", message: "'queueMicrotask' is not defined"}},
		{name: "a synchronous script answers as before", script: `input.items.filter(i => i.ok).map(i => i.id)`, input: `{"items":[{"id":1,"ok":true},{"id":2,"ok":false}]}`, want: want{class: "ok", value: `[1]`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, rt := range []route{spiRoute, evaluations} {
				q := req{script: tc.script, input: tc.input, wall: tc.wall, memory: tc.memory}
				if q.wall == 0 {
					q.wall = generous
				}
				check(t, q, s.do(t, rt, q), tc.want)
			}
		})
	}
}

// An unhandled rejection changes no outcome and shows in captureLogs as
// console.error writes it, after what the script and its jobs wrote.
func TestUnhandledRejectionInCaptureLogs(t *testing.T) {
	s := shared(t)
	q := req{script: `console.log("start");
		Promise.reject(new TypeError("lost"));
		Promise.reject(new Error("handled")).catch(() => {});
		Promise.resolve().then(() => console.log("in a job"));
		({ done: true })`, wall: generous, logs: true}
	r := s.do(t, evaluations, q)
	check(t, q, r, want{class: "ok", value: `{"done":true}`})
	const logs = "start\nin a job\n[error] unhandled promise rejection: TypeError: lost\n"
	if r.logs == nil || *r.logs != logs {
		t.Fatalf("logs %v, want %q", r.logs, logs)
	}
	// The result's own rejection is the outcome, not a log line.
	q.script = `Promise.reject(new Error("mine"))`
	r = s.do(t, evaluations, q)
	check(t, q, r, want{class: "threw", name: "Error", message: "mine"})
	if r.logs != nil && strings.Contains(*r.logs, "unhandled") {
		t.Fatalf("the result's rejection was logged: %q", *r.logs)
	}
}
