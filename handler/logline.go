package handler

import (
	"errors"
	"log/slog"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/internal/logline"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// The handler's log lines are an interface: terraform/monitoring.tf's
// log-based metrics and alerts select them by their messages and read their
// fields, and deploy's TestLogFiltersReadWhatTheServiceWrites holds the two
// together. Each line is a type whose fields are its fields (logline.Attrs),
// written under one of these messages.
const (
	// EvaluationMessage is the message of the line the service logs for
	// each request to an evaluation route and for each input of a batch
	// (evaluationLine), at INFO, or at ERROR when the answer is a 5xx
	// problem.
	EvaluationMessage = "evaluation"
	// RequestMessage is the message of the line of every other request
	// (requestLine), at INFO; DEBUG for the platform's probes.
	RequestMessage = "request"
)

// The levels of the lines: a request's, raised for a 5xx answer and lowered
// for a probe. An engine fault's line is package answer's.
const (
	requestLevel = slog.LevelInfo
	probeLevel   = slog.LevelDebug
)

// LogLines describes the lines the handler writes for the readers of the
// service's log.
func LogLines() []logline.Line {
	return []logline.Line{
		logline.Describe(EvaluationMessage, requestLevel, evaluationLine{}),
		logline.Describe(RequestMessage, probeLevel, requestLine{}),
	}
}

// onRoute names the route a line is about.
type onRoute struct {
	Route string `log:"route"`
}

// requestFields are what the line of every request says: its route, its
// answer's status (499 when the client left before it), how long it took,
// the caller, and for a problem its type, whether a retry can help and
// its cause.
type requestFields struct {
	onRoute
	Status    int     `log:"status"`
	TotalMs   float64 `log:"totalMs"`
	Principal string  `log:"principal,omitempty"`
	Problem   string  `log:"problem,omitempty"`
	Retryable *bool   `log:"retryable,omitempty"`
	Error     string  `log:"error,omitempty"`
}

// requestLine is the line of a request to no evaluation route, with its
// method, and its path when no route matched. A header block over the
// server's cap (HeaderLimitListener) is refused before its request line is
// read: its line has neither.
type requestLine struct {
	requestFields
	Method string `log:"method,omitempty"`
	Path   string `log:"path,omitempty"`
}

// unmatchedRoute is the route of a line of a request that matched none.
const unmatchedRoute = "unmatched"

// evaluationLine is the line of a request to an evaluation route, on both
// routes: what it asked, what it came to and what its run used; never the
// input, the value, the logs or the script's text.
type evaluationLine struct {
	requestFields
	// Script is the reference the request named, or "inline" for a
	// script sent by value, whose hash OfScript gives.
	Script string `log:"script,omitempty"`
	logline.OfScript
	*runFields
	// OutputBytes is the length of the answer's value; absent for a
	// request refused before its evaluation began.
	OutputBytes *int `log:"outputBytes"`
	label
	// Index is the input's among a batch's inputs, for the line of each
	// input of a batch (whose request has a request line of its own).
	Index *int `log:"index,omitempty"`
}

// runFields are what a request that was decoded and run used
// (docs/spi.md, "Usage").
type runFields struct {
	Phases        phasesMs `log:"phases"`
	EvaluateMs    float64  `log:"evaluateMs"`
	CPUMs         float64  `log:"cpuMs"`
	CPUBudgetUsed uint64   `log:"cpuBudgetUsed"`
	CPUBudget     uint64   `log:"cpuBudget"`
	PeakMemory    int64    `log:"peakMemoryBytes"`
	MemoryLimit   int64    `log:"memoryLimitBytes"`
	// the fractions of the limits, for a log-based distribution
	// (terraform/monitoring.tf), which cannot divide
	MemoryUse    float64 `log:"memoryUse"`
	CPUBudgetUse float64 `log:"cpuBudgetUse"`
	InputBytes   int     `log:"inputBytes"`
}

// phasesMs are a run's phases in milliseconds, each a field named for its
// phase (spi.Usage.Phases names them).
type phasesMs spi.Usage

func phaseField(name string) string { return name + "Ms" }

func (p phasesMs) LogAttrs() []slog.Attr {
	u := spi.Usage(p)
	var out []slog.Attr
	for _, ph := range u.Phases() {
		out = append(out, slog.Float64(phaseField(ph.Name), ms(*ph.D)))
	}
	return out
}

func (phasesMs) LogFields() []string {
	var u spi.Usage
	var out []string
	for _, ph := range u.Phases() {
		out = append(out, phaseField(ph.Name))
	}
	return out
}

// label is what an evaluation request came to, the one label of it that its
// log line and its metrics carry: "client-gone" when the client left before
// the answer; the problem's type when the answer is a problem; else "ok",
// the typed failure's channel with the limit's kind, or the SPI outcome's
// kind with its limit; "unknown" when nothing of that is known.
type label struct {
	Outcome string `log:"outcome"`
	Limit   string `log:"limit,omitempty"`
}

// labelOf labels an evaluation request: whether its client left, the
// problem it was answered with, and its evaluation's record (nil when it
// was refused before its evaluation began).
func labelOf(gone bool, p *api.Problem, ev *evalRecord) label {
	switch {
	case gone:
		return label{Outcome: "client-gone"}
	case p != nil:
		return label{Outcome: string(p.ProblemType())}
	case ev == nil || !ev.ran:
		return label{Outcome: "unknown"}
	}
	var f *effect.Failure
	switch o := ev.res.Outcome; {
	case errors.As(ev.err, &f):
		return label{Outcome: string(f.Channel), Limit: string(f.Kind)}
	case ev.err != nil: // an error that no problem answered
		return label{Outcome: "unknown"}
	case ev.ev.Answer == effect.AnswerOutcome && !o.OK:
		return label{Outcome: string(o.Kind), Limit: string(o.Limit)}
	}
	return label{Outcome: "ok"}
}

// line fills in what the evaluation says of itself in its line l: the
// script, what its run used and its answer's length (the request's fields
// and the label are the request's).
func (rec *evalRecord) line(l *evaluationLine) {
	out := 0
	l.OutputBytes = &out
	if !rec.ran {
		return
	}
	l.Script, l.ScriptSHA256 = scriptLabel(rec.ev)
	res := rec.res
	switch {
	case rec.err != nil:
	case rec.ev.Answer == effect.AnswerOutcome && res.Outcome.OK:
		out = len(res.Outcome.Value)
	case rec.ev.Answer != effect.AnswerOutcome:
		out = len(res.Value)
	}
	u := res.Usage
	memoryUse, _ := u.MemoryUse()
	cpuBudgetUse, _ := u.CPUBudgetUse()
	l.runFields = &runFields{
		Phases:     phasesMs(u),
		EvaluateMs: ms(res.Call.Duration()), CPUMs: ms(u.CPU),
		CPUBudgetUsed: u.CPUBudgetUsed, CPUBudget: u.CPUBudget,
		PeakMemory: u.PeakMemoryBytes, MemoryLimit: u.MemoryLimitBytes,
		MemoryUse: fourDecimals(memoryUse), CPUBudgetUse: fourDecimals(cpuBudgetUse),
		// a body refused before it was read has no input to count
		InputBytes: len(rec.ev.Input),
	}
}
