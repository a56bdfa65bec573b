package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// BatchMembers are the members of a POST /v1/evaluations:batch body, in
// the order AppendBatchRequest writes them: those of /v1/evaluations, with
// "inputs", an array of input values, for its "input".
func BatchMembers() []Member {
	return []Member{{"scriptRef", StringType}, {"inputs", ArrayType}, {"limits", ObjectType}, {"expectedOutputShapeHash", StringType}, {"captureLogs", BooleanType}, {"determinism", ObjectType}}
}

// BatchContentType is the media type of a batch's answer: one JSON object
// a line (docs/batch.md).
const BatchContentType = "application/x-ndjson"

// DecodeBatchRequest reads and validates a POST /v1/evaluations:batch body
// as the service does, with the server's limits l: the evaluation every
// input is run under (its Input unset) and the inputs, each the text of an
// element of "inputs", in their order. It refuses a body as
// DecodeEvaluationRequest does, and one with more than l.MaxBatchItems
// inputs with the 413 naming maxBatchItems. An input over maxInputBytes is
// no refusal: it is that input's answer (inputTooLarge), as it would be
// alone.
func DecodeBatchRequest(body []byte, l Limits) (spi.Evaluation, []jsontext.Text, error) {
	b, refused := readRequest(body, BatchMembers(), l.MaxBatchItems)
	if refused != nil {
		return spi.Evaluation{}, nil, refused
	}
	if _, ok := b.top["inputs"]; !ok {
		return spi.Evaluation{}, nil, refuse(ProblemInvalidRequest,
			`"inputs" is required: an array of the input values, one run each, for example [{"a":1},{"a":2}]`).WithField("inputs")
	}
	ev, refused := b.byReference(l)
	if refused != nil {
		return spi.Evaluation{}, nil, refused
	}
	return ev, b.inputs, nil
}

// tooManyInputs is the 413 of a batch body with more than max inputs.
func tooManyInputs(max int64) *Problem {
	return NewProblem(ProblemTooManyInputs,
		fmt.Sprintf(`"inputs" has more than the server's maxBatchItems of %d inputs; split the batch`, max)).
		WithLimit("maxBatchItems", max).WithField("inputs")
}

// BatchRequest is a batch's body as a client writes it: Request's members
// for the evaluation every input shares (its Input and Script unused), and
// the inputs, each JSON text.
type BatchRequest struct {
	Request
	Inputs []json.RawMessage
}

// AppendBatchRequest writes r after dst; it fails only when an input is
// not JSON text.
func AppendBatchRequest(dst []byte, r BatchRequest) ([]byte, error) {
	var err error
	w := requestWriter{append(dst, '{')}
	w.str("scriptRef", r.ScriptRef)
	w.name("inputs")
	w.b = append(w.b, '[')
	for i, in := range r.Inputs {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		if w.b, err = appendCompact(w.b, in); err != nil {
			return nil, fmt.Errorf("api: inputs[%d]: %w", i, err)
		}
	}
	w.b = append(w.b, ']')
	w.options(r.Request)
	return append(w.b, '}'), nil
}

// BatchLine is one line of a batch's answer (docs/batch.md). Exactly one
// of Answer, Problem, NotRun and Summary is set; Index is the input's, for
// all but the summary.
type BatchLine struct {
	Index int
	// Answer is the input's answer, as POST /v1/evaluations would give it
	// for that input alone: its value or typed failure, logs and usage.
	Answer *EvaluationResponse
	// Problem is the problem document /v1/evaluations would answer that
	// input alone with (the backend unavailable, say); its status says
	// whether a retry can help.
	Problem *Problem
	// NotRun, when not "", says why the input was not run, or not to its
	// end: the batch stopped (its request's deadline, the client gone).
	// Sent again, it runs as if it had never been sent.
	NotRun string
	// Summary ends a batch that was answered whole.
	Summary *BatchSummary
}

// BatchSummary is a batch's last line: how many inputs came to what, and
// what their runs used together. Its tags are its members' names, which a
// struct that embeds it (a bulk shard's manifest) writes flat.
type BatchSummary struct {
	// Items is the number of inputs, each answered by one line.
	Items int `json:"items"`
	// Outcomes counts the answers by what they came to: "ok" or the typed
	// failure's channel (docs/spi.md, "Channels"); a summary line writes
	// {} for none.
	Outcomes map[string]int `json:"outcomes"`
	// Problems and NotRun count the lines of those kinds.
	Problems int `json:"problems"`
	NotRun   int `json:"notRun"`
	// Usage is the sum of the runs' usages, with the batch's one fetch and
	// verification of the script; its peakMemoryBytes is the most any one
	// run held, and memoryLimitBytes each run's limit.
	Usage spi.Usage `json:"usage"`
}

// Add counts one line in s (a summary line is not counted).
func (s *BatchSummary) Add(l BatchLine) {
	switch {
	case l.Summary != nil:
		return
	case l.Answer != nil:
		if s.Outcomes == nil {
			s.Outcomes = map[string]int{}
		}
		s.Outcomes[AnswerOutcome(*l.Answer)]++
		if u := l.Answer.Usage; u != nil {
			s.AddUsage(*u)
		}
	case l.Problem != nil:
		s.Problems++
	default:
		s.NotRun++
	}
	s.Items++
}

// AddUsage adds one run's usage to the total.
func (s *BatchSummary) AddUsage(u spi.Usage) {
	t := &s.Usage
	tp, up := t.Phases(), u.Phases()
	for i := range tp {
		*tp[i].D += *up[i].D
	}
	t.CPU += u.CPU
	t.CPUBudgetUsed += u.CPUBudgetUsed
	t.CPUBudget += u.CPUBudget
	t.PeakMemoryBytes = max(t.PeakMemoryBytes, u.PeakMemoryBytes)
	t.MemoryLimitBytes = max(t.MemoryLimitBytes, u.MemoryLimitBytes)
}

// AnswerOutcome is what an answer came to: "ok", or its failure's
// channel.
func AnswerOutcome(r EvaluationResponse) string {
	if r.Failure != nil {
		return string(r.Failure.Channel)
	}
	return "ok"
}

// AppendBatchLine writes l after dst as one line of a batch's answer, its
// newline included.
func AppendBatchLine(dst []byte, l BatchLine) ([]byte, error) {
	start := len(dst)
	var err error
	switch {
	case l.Summary != nil:
		if dst, err = appendSummary(append(dst, `{"summary":`...), *l.Summary); err != nil {
			return dst[:start], err
		}
		dst = append(dst, '}')
	case l.Answer != nil:
		dst = strconv.AppendInt(append(dst, `{"index":`...), int64(l.Index), 10)
		at := len(dst)
		if dst, err = AppendEvaluation(dst, *l.Answer); err != nil {
			return dst[:start], err
		}
		dst[at] = ',' // the answer's members follow the index
	case l.Problem != nil:
		dst = strconv.AppendInt(append(dst, `{"index":`...), int64(l.Index), 10)
		dst = append(AppendProblem(append(dst, `,"problem":`...), *l.Problem), '}')
	case l.NotRun != "":
		dst = strconv.AppendInt(append(dst, `{"index":`...), int64(l.Index), 10)
		dst = jsontext.AppendQuote(append(dst, `,"notRun":true,"detail":`...), l.NotRun)
		dst = append(dst, '}')
	default:
		return dst, errors.New("api: a batch line is an answer, a problem, an input not run or the summary")
	}
	return append(dst, '\n'), nil
}

// appendSummary writes the summary object: its fields under their tags,
// as a struct that embeds it writes them.
func appendSummary(dst []byte, s BatchSummary) ([]byte, error) {
	if s.Outcomes == nil {
		s.Outcomes = map[string]int{}
	}
	b, err := json.Marshal(s)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// DecodeBatchLine reads one line of a batch's answer (without its
// newline) as docs/spi.md, "How the wire evolves", says a reader does: the
// members it knows checked, any other ignored.
func DecodeBatchLine(line []byte) (BatchLine, error) {
	obj, err := jsontext.ParseObject("", line)
	if err != nil {
		return BatchLine{}, err
	}
	var l BatchLine
	if s, ok := obj.Child("summary", false); ok {
		sum := &BatchSummary{Outcomes: map[string]int{}}
		n, _ := s.Count("items", true)
		sum.Items = int(min(n, 1<<31-1))
		if o, ok := s.Child("outcomes", true); ok {
			for _, k := range o.Keys() {
				n, _ := o.Count(k, true)
				sum.Outcomes[k] = int(min(n, 1<<31-1))
			}
			s.Adopt(o.Done())
		}
		n, _ = s.Count("problems", true)
		sum.Problems = int(min(n, 1<<31-1))
		n, _ = s.Count("notRun", true)
		sum.NotRun = int(min(n, 1<<31-1))
		if u, ok := s.Child("usage", true); ok {
			sum.Usage = spi.ReadUsage(u)
			s.Adopt(u.Done())
		}
		s.Skip()
		obj.Adopt(s.Done())
		obj.Skip()
		if err := obj.Done(); err != nil {
			return BatchLine{}, err
		}
		l.Summary = sum
		return l, nil
	}
	n, _ := obj.Count("index", true)
	l.Index = int(min(n, 1<<31-1))
	switch {
	case obj.Err() != nil:
	case obj.Unread("problem"):
		raw, _ := obj.Take("problem", true)
		p, err := DecodeProblem(raw)
		obj.Adopt(err)
		l.Problem = &p
	case obj.Unread("notRun"):
		if nr, _ := obj.Bool("notRun", true); !nr {
			obj.Fail("notRun", "must be true when present")
		}
		l.NotRun = obj.NonEmpty("detail") // the reason is what the line says
	default:
		obj.Skip()
		if err := obj.Done(); err != nil {
			return BatchLine{}, err
		}
		a, err := DecodeEvaluation(line) // the index is a member it ignores
		if err != nil {
			return BatchLine{}, err
		}
		l.Answer = &a
		return l, nil
	}
	obj.Skip()
	if err := obj.Done(); err != nil {
		return BatchLine{}, err
	}
	return l, nil
}
