package answer

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/internal/logline"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// An evaluation's log lines are an interface: terraform/monitoring.tf's
// log-based metrics and alerts select them by their messages and read
// their fields, and deploy's TestLogFiltersReadWhatTheServiceWrites holds
// the two together. Each line is a type whose fields are its fields
// (logline.Attrs), written under one of these messages, by the service
// and, for the inputs they run, by eval -inputs and the bulk verb.
const (
	// EvaluationMessage is the message of the line of an evaluation
	// (Evaluation): each request to an evaluation route, each input of a
	// batch; at INFO, or at ERROR when the answer is a 5xx problem.
	EvaluationMessage = "evaluation"
	// EngineFaultMessage is the message of the line logged at ERROR for
	// each evaluation whose engine was broken from inside by its script
	// (an engine fault: spi.Report.EngineFault), an operator's alarm
	// (docs/security.md, "Engine faults").
	EngineFaultMessage = "engine fault"
)

const (
	evaluationLevel  = slog.LevelInfo
	engineFaultLevel = slog.LevelError
)

// LogLines describes the lines of this package for the readers of the
// service's log (service.LogLines).
func LogLines() []logline.Line {
	return []logline.Line{
		logline.Describe(EvaluationMessage, evaluationLevel, Evaluation{}),
		logline.Describe(EngineFaultMessage, engineFaultLevel, engineFaultLine{}),
	}
}

// Request is what the line of every request says: its route (or, for an
// input a verb runs outside the service, the verb's name), its answer's
// status (499 when the client left before it), how long it took, the
// caller, and for a problem its type, whether a retry can help and its
// cause.
type Request struct {
	Route     string  `log:"route"`
	Status    int     `log:"status"`
	TotalMs   float64 `log:"totalMs"`
	Principal string  `log:"principal,omitempty"`
	Problem   string  `log:"problem,omitempty"`
	Retryable *bool   `log:"retryable,omitempty"`
	Error     string  `log:"error,omitempty"`
}

// RequestOf is the Request of an answer on route with status, total its
// time, p its problem (nil for none), and the level of its line: INFO,
// ERROR for a 5xx problem.
func RequestOf(route string, status int, total time.Duration, p *api.Problem) (Request, slog.Level) {
	req := Request{Route: route, Status: status, TotalMs: Milliseconds(total)}
	level := evaluationLevel
	if p != nil {
		req.Problem, req.Retryable = string(p.ProblemType()), p.Retryable
		if cause := errors.Unwrap(p); cause != nil {
			req.Error = spi.BoundText(cause.Error(), spi.MaxMessageUnits)
		}
		if p.Status >= 500 {
			level = slog.LevelError
		}
	}
	return req, level
}

// Evaluation is the line of an evaluation: what it asked, what it came to
// and what its run used; never the input, the value, the logs or the
// script's text.
type Evaluation struct {
	Request
	// Script is the reference the evaluation named, or "inline" for a
	// script sent by value, whose hash OfScript gives.
	Script string `log:"script,omitempty"`
	logline.OfScript
	*runFields
	// OutputBytes is the length of the answer's value; absent for a
	// request refused before its evaluation began.
	OutputBytes *int `log:"outputBytes"`
	Label
	// Index is the input's among a batch's inputs (for bulk, among all the
	// job's inputs), for the line of each input of a batch (whose request,
	// on the route, has a request line of its own).
	Index *int `log:"index,omitempty"`
	// Source is where a verb read the input: file:line (-:line for
	// standard input), or gs://bucket/object:line.
	Source string `log:"source,omitempty"`
}

// runFields are what an evaluation that was decoded and run used
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
		out = append(out, slog.Float64(phaseField(ph.Name), Milliseconds(*ph.D)))
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

// Milliseconds is d as the log lines and the Server-Timing header write
// a duration: milliseconds, to the microsecond.
func Milliseconds(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// fourDecimals rounds a fraction for the line.
func fourDecimals(f float64) float64 { return math.Round(f*1e4) / 1e4 }

// Label is what an evaluation came to, the one label of it that its log
// line and its metrics carry: "client-gone" when the client left before
// the answer; the problem's type when the answer is a problem; "not-run"
// for a batch's input that was not run; else "ok", the typed failure's
// channel with the limit's kind, or the SPI outcome's kind with its limit;
// "unknown" when nothing of that is known.
type Label struct {
	Outcome string `log:"outcome"`
	Limit   string `log:"limit,omitempty"`
}

// notRunOutcome is the outcome of a batch's input that was not run.
const notRunOutcome = "not-run"

// Record is what one evaluation leaves for its lines, its metrics and its
// spans: what was asked and what Effect.Run found. It only records:
// nothing that answers reads it.
type Record struct {
	Ran        bool // the evaluation was decoded and run
	Evaluation spi.Evaluation
	Result     effect.Result
	Err        error
}

// NewEvaluation is the line of an evaluation answered as req says (p its
// problem, nil for none), whose client left before the answer when gone;
// rec is what it ran, nil when it was refused before its evaluation began.
func NewEvaluation(req Request, gone bool, p *api.Problem, rec *Record) Evaluation {
	l := Evaluation{Request: req, Label: labelOf(gone, p, rec)}
	l.fill(rec)
	return l
}

// ItemEvaluation is the line of a batch's input run where (the route, or
// a verb's name), as the line of the request of that input alone would
// be, with its index: ev is the batch's evaluation, input the input's
// text, it its Item and l its line in the answer (Item). It returns the
// Record of the input's run and the line's level.
func ItemEvaluation(where string, ev spi.Evaluation, input jsontext.Text, it effect.Item, l api.BatchLine) (Evaluation, *Record, slog.Level) {
	ev.Input = input
	rec := &Record{Ran: !it.NotRun, Evaluation: ev, Result: it.Result, Err: it.Err}
	status := 200
	if l.Problem != nil {
		status = l.Problem.Status
	}
	req, level := RequestOf(where, status, it.Result.Call.Duration(), l.Problem)
	line := NewEvaluation(req, false, l.Problem, rec)
	if it.NotRun {
		line.Label = Label{Outcome: notRunOutcome}
	}
	line.Index = &it.Index
	return line, rec, level
}

// LogItem writes the lines of a batch's input that a verb ran outside the
// service, as the batch route writes them (ItemEvaluation), under the
// verb's name, with source, where the input was read.
func LogItem(ctx context.Context, log *slog.Logger, verb string, ev spi.Evaluation, input jsontext.Text, it effect.Item, l api.BatchLine, source string) {
	line, rec, level := ItemEvaluation(verb, ev, input, it, l)
	line.Source = source
	Log(ctx, log, level, line, rec)
}

// Log writes an evaluation's line at level, after its engine fault's line
// when its run had one; rec is what it ran (nil for none).
func Log(ctx context.Context, log *slog.Logger, level slog.Level, line Evaluation, rec *Record) {
	if rec != nil && rec.Result.EngineFault != "" {
		LogEngineFault(ctx, log, line.Route, rec.Evaluation, rec.Result)
	}
	log.LogAttrs(ctx, level, EvaluationMessage, logline.Attrs(line)...)
}

// labelOf labels an evaluation: whether its client left, the problem it
// was answered with, and what it ran (nil when it was refused before its
// evaluation began).
func labelOf(gone bool, p *api.Problem, rec *Record) Label {
	switch {
	case gone:
		return Label{Outcome: "client-gone"}
	case p != nil:
		return Label{Outcome: string(p.ProblemType())}
	case rec == nil || !rec.Ran:
		return Label{Outcome: "unknown"}
	}
	var f *spi.Failure
	switch o := rec.Result.Outcome; {
	case errors.As(rec.Err, &f):
		return Label{Outcome: string(f.Channel), Limit: string(f.Kind)}
	case rec.Err != nil: // an error that no problem answered
		return Label{Outcome: "unknown"}
	case rec.Evaluation.Answer == spi.AnswerOutcome && !o.OK:
		return Label{Outcome: string(o.Kind), Limit: string(o.Limit)}
	}
	return Label{Outcome: "ok"}
}

// fill fills in what the evaluation rec says of itself in its line l: the
// script, what its run used and its answer's length (the request's
// fields and the label are the request's). A nil rec says nothing.
func (l *Evaluation) fill(rec *Record) {
	if rec == nil {
		return
	}
	out := 0
	l.OutputBytes = &out
	if !rec.Ran {
		return
	}
	l.Script, l.ScriptSHA256 = scriptLabel(rec.Evaluation)
	res := rec.Result
	switch {
	case rec.Err != nil:
	case rec.Evaluation.Answer == spi.AnswerOutcome && res.Outcome.OK:
		out = len(res.Outcome.Value)
	case rec.Evaluation.Answer != spi.AnswerOutcome:
		out = len(res.Value)
	}
	u := res.Usage
	memoryUse, _ := u.MemoryUse()
	cpuBudgetUse, _ := u.CPUBudgetUse()
	l.runFields = &runFields{
		Phases:     phasesMs(u),
		EvaluateMs: Milliseconds(res.Call.Duration()), CPUMs: Milliseconds(u.CPU),
		CPUBudgetUsed: u.CPUBudgetUsed, CPUBudget: u.CPUBudget,
		PeakMemory: u.PeakMemoryBytes, MemoryLimit: u.MemoryLimitBytes,
		MemoryUse: fourDecimals(memoryUse), CPUBudgetUse: fourDecimals(cpuBudgetUse),
		// a body refused before it was read has no input to count
		InputBytes: len(rec.Evaluation.Input),
	}
}

// scriptLabel names an evaluation's script in its line: its reference, or
// "inline" and the reference of the bytes that ran.
func scriptLabel(ev spi.Evaluation) (script, inlineSHA string) {
	if !ev.ScriptRef.IsZero() {
		return ev.ScriptRef.String(), ""
	}
	return "inline", ScriptRef(ev).String()
}

// engineFaultLine is the line of an engine fault: where it ran (the route,
// or a verb's name), the script's hash, by which an operator fetches the
// script from the store to reproduce the fault, and the trap's text; the
// request's id and trace, which every line of a request carries, tie it to
// its evaluation line.
type engineFaultLine struct {
	Route string `log:"route"`
	logline.OfScript
	Trap string `log:"trap"`
}

// LogEngineFault writes the engine fault line of ev's run, whose result
// res has an EngineFault, under where: the route, or, for a verb that
// runs scripts outside the service, the verb's name.
func LogEngineFault(ctx context.Context, log *slog.Logger, where string, ev spi.Evaluation, res effect.Result) {
	log.LogAttrs(ctx, engineFaultLevel, EngineFaultMessage, logline.Attrs(engineFaultLine{
		Route:    where,
		OfScript: logline.OfScript{ScriptSHA256: ScriptRef(ev).String()},
		Trap:     res.EngineFault,
	})...)
}

// ScriptRef is the content reference of the script an evaluation ran,
// sent by reference or by value alike: the hash by which the store holds
// it.
func ScriptRef(ev spi.Evaluation) contentref.Ref {
	if !ev.ScriptRef.IsZero() {
		return ev.ScriptRef
	}
	return contentref.RefOf([]byte(ev.Script))
}
