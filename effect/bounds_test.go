package effect_test

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// settledCase is a row of api/testdata/bounds/settled.json, the table of
// spi.Bounds (docs/spi.md, "Answers no retry can change") that the
// TypeScript client's tests read too.
type settledCase struct {
	Name                                 string
	Bounds                               spi.Bounds
	ScriptBytes, MemoryBytes, InputBytes int64
	Outcome                              json.RawMessage // null: left to a run
}

func settledCases(t *testing.T) []settledCase {
	t.Helper()
	b, err := os.ReadFile("../api/testdata/bounds/settled.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []settledCase
	if err := json.Unmarshal(b, &cases); err != nil || len(cases) == 0 {
		t.Fatalf("the table: %v (%d cases)", err, len(cases))
	}
	return cases
}

// want is the case's outcome, and whether it has one.
func (c settledCase) want(t *testing.T) (spi.Outcome, bool) {
	t.Helper()
	if string(c.Outcome) == "null" {
		return spi.Outcome{}, false
	}
	o, err := spi.DecodeOutcome(c.Outcome)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	return o, true
}

// Run answers what no retry can change itself, on both answers, before
// anything runs: each row of the table with a script by value, the
// outcome as it is or as its channel; and a row the bounds leave to a run
// reaches the backend.
func TestRunAnswersWhatNoRetryCanChange(t *testing.T) {
	for _, c := range settledCases(t) {
		if c.ScriptBytes < 0 || c.MemoryBytes == 0 {
			continue // by reference the fetch bounds it (TestRunNotRunReasons); the decoders fill in the default memory
		}
		want, settled := c.want(t)
		for _, answer := range []spi.Answer{spi.AnswerOutcome, spi.AnswerChannel} {
			b := returning(spi.OK([]byte("1")), nil)
			e := mustNew(t, effect.NoStore, b, effect.Options{MaxScriptBytes: c.Bounds.MaxScriptBytes,
				MinMemoryBytes: c.Bounds.MinMemoryBytes, MaxInputBytes: int(c.Bounds.MaxInputBytes)})
			ev := spi.Evaluation{Script: "1;" + strings.Repeat(" ", int(c.ScriptBytes)-2),
				Input:  []byte(`"` + strings.Repeat("i", int(c.InputBytes)-2) + `"`),
				Limits: spi.Limits{WallClock: time.Second, MemoryBytes: c.MemoryBytes}, Answer: answer}
			res, err := e.Run(context.Background(), ev)
			if called := b.evalCalls.Load() == 1; called == settled {
				t.Errorf("%s: the backend was called: %v, want %v", c.Name, called, !settled)
			}
			if !settled {
				if err != nil {
					t.Errorf("%s: %v", c.Name, err)
				}
				continue
			}
			if !reflect.DeepEqual(res.Outcome, want) || res.Usage.MemoryLimitBytes != c.MemoryBytes {
				t.Errorf("%s: outcome %+v, usage %+v; want %+v", c.Name, res.Outcome, res.Usage, want)
			}
			if answer == spi.AnswerOutcome {
				if err != nil {
					t.Errorf("%s: %v", c.Name, err)
				}
				continue
			}
			f := asFailure(t, err)
			var channel spi.Failure
			switch want.Kind {
			case spi.KindThrew:
				channel = spi.Failure{Channel: spi.ChannelScriptError, Name: want.Name, Message: want.Message}
			case spi.KindLimit:
				channel = spi.Failure{Channel: spi.ChannelLimitExceeded, Kind: want.Limit}
			case spi.KindInputTooLarge:
				channel = spi.Failure{Channel: spi.ChannelInputTooLarge, LimitBytes: int(c.Bounds.MaxInputBytes)}
			}
			if !reflect.DeepEqual(*f, channel) {
				t.Errorf("%s: channel %+v, want %+v", c.Name, *f, channel)
			}
		}
	}
}

// A limit above its maximum runs at the maximum, which the backend gets and
// the usage reports; one at or below it runs as asked.
func TestRunRunsLimitsAboveTheMaximaAtTheMaxima(t *testing.T) {
	opts := effect.Options{MaxWallClock: 2 * time.Second, MaxMemoryBytes: 32 << 20}
	for _, tc := range []struct {
		name       string
		asked, ran spi.Limits
	}{
		{"both above", spi.Limits{WallClock: time.Hour, MemoryBytes: 1 << 40}, spi.Limits{WallClock: 2 * time.Second, MemoryBytes: 32 << 20}},
		{"a nanosecond above", spi.Limits{WallClock: 2*time.Second + 1, MemoryBytes: 32<<20 + 1}, spi.Limits{WallClock: 2 * time.Second, MemoryBytes: 32 << 20}},
		{"at the maxima", spi.Limits{WallClock: 2 * time.Second, MemoryBytes: 32 << 20}, spi.Limits{WallClock: 2 * time.Second, MemoryBytes: 32 << 20}},
		{"below", spi.Limits{WallClock: time.Millisecond, MemoryBytes: 1}, spi.Limits{WallClock: time.Millisecond, MemoryBytes: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := returning(spi.OK([]byte("1")), nil)
			e := mustNew(t, effect.NoStore, b, opts)
			res, err := e.Run(context.Background(), spi.Evaluation{Script: "1", Limits: tc.asked, Answer: spi.AnswerOutcome})
			if err != nil || !res.Outcome.OK {
				t.Fatalf("Run = %+v, %v", res.Outcome, err)
			}
			if got := b.requests[0].Limits; got != tc.ran || res.Usage.MemoryLimitBytes != tc.ran.MemoryBytes {
				t.Errorf("the backend ran under %+v, the usage says %d bytes; want %+v", got, res.Usage.MemoryLimitBytes, tc.ran)
			}
		})
	}
}
