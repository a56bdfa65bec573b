package benchhost

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// BatchBody is a batch request of n copies of input, by reference.
func BatchBody(ref, input string, n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"scriptRef":%q,"inputs":[`, ref)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(input)
	}
	b.WriteString("]}")
	return b.Bytes()
}

// Single sends one evaluation to POST /v1/evaluations and checks that its
// answer is 200 and ok; it returns the request's time.
func (s *Server) Single(c *http.Client, body []byte) (time.Duration, error) {
	resp, data, d, err := s.Post(c, "/v1/evaluations", body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d: %.300s", resp.StatusCode, data)
	}
	var a struct {
		OK bool `json:"ok"`
	}
	if err := json.Unmarshal(data, &a); err != nil || !a.OK {
		return 0, fmt.Errorf("not ok: %.300s", data)
	}
	return d, nil
}

// Batch sends one batch of n inputs to POST /v1/evaluations:batch and
// checks its answer (CheckBatch); it returns the request's time.
func (s *Server) Batch(c *http.Client, body []byte, n int) (time.Duration, error) {
	resp, data, d, err := s.Post(c, "/v1/evaluations:batch", body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d: %.300s", resp.StatusCode, data)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		return 0, fmt.Errorf("Content-Type %q, not application/x-ndjson", ct)
	}
	if err := CheckBatch(data, n); err != nil {
		return 0, err
	}
	return d, nil
}

// CheckBatch checks a batch's answer of n inputs, each of which should
// have come to ok: n lines {"index":i,"ok":true,…} in order, then the
// summary counting n items, n ok, no problem, none not run, and nothing
// after it.
func CheckBatch(data []byte, n int) error {
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) == 0 || len(lines[len(lines)-1]) != 0 {
		return errors.New("the answer does not end with a newline: cut")
	}
	lines = lines[:len(lines)-1]
	if len(lines) != n+1 {
		return fmt.Errorf("%d lines, want %d answers and the summary", len(lines), n)
	}
	for i, l := range lines[:n] {
		var a struct {
			Index   *int            `json:"index"`
			OK      bool            `json:"ok"`
			Summary json.RawMessage `json:"summary"`
		}
		if err := json.Unmarshal(l, &a); err != nil {
			return fmt.Errorf("line %d: %w", i+1, err)
		}
		if a.Index == nil || *a.Index != i {
			return fmt.Errorf("line %d is not input %d's: %.200s", i+1, i, l)
		}
		if !a.OK {
			return fmt.Errorf("input %d not ok: %.300s", i, l)
		}
	}
	var sum struct {
		Summary *struct {
			Items    int            `json:"items"`
			Outcomes map[string]int `json:"outcomes"`
			Problems int            `json:"problems"`
			NotRun   int            `json:"notRun"`
		} `json:"summary"`
	}
	last := lines[n]
	if err := json.Unmarshal(last, &sum); err != nil {
		return fmt.Errorf("the summary: %w", err)
	}
	switch s := sum.Summary; {
	case s == nil:
		return fmt.Errorf("the last line is not the summary: %.200s", last)
	case s.Items != n || s.Problems != 0 || s.NotRun != 0 || len(s.Outcomes) != 1 || s.Outcomes["ok"] != n:
		return fmt.Errorf("the summary counts %d items, outcomes %v, %d problems, %d not run; want %d, all ok", s.Items, s.Outcomes, s.Problems, s.NotRun, n)
	}
	return nil
}
