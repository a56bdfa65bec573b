package logline

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/telemetry"
)

// phases is a FieldSet: a field per phase, each named for its phase.
type phases struct{ run, serialise float64 }

func (p phases) LogAttrs() []slog.Attr {
	return []slog.Attr{slog.Float64("runMs", p.run), slog.Float64("serialiseMs", p.serialise)}
}

func (phases) LogFields() []string { return []string{"runMs", "serialiseMs"} }

type common struct {
	Route string `log:"route"`
}

type usage struct {
	Phases phases  `log:"phases"`
	CPUMs  float64 `log:"cpuMs"`
}

type sample struct {
	common
	*usage
	Event     string        `log:"event,omitempty"`
	Status    int           `log:"status"`
	Retryable *bool         `log:"retryable,omitempty"`
	Bytes     *int          `log:"bytes"`
	Took      time.Duration `log:"took"`
	Used      uint64        `log:"used,omitempty"`
	Note      string        // not a field of the line
	hidden    string        `log:"hidden"`
}

// A line writes its tagged fields under their names, in order, through
// embedded structs and FieldSets, leaving out what is empty and marked so
// and every nil pointer; Fields names every field a line of the type can
// write, the same names as a line with every field set writes, in the same
// order.
func TestLineFields(t *testing.T) {
	yes, n := true, 0
	full := sample{common{"/r"}, &usage{phases{1, 2}, 3}, "hardKill", 200, &yes, &n, 1500 * time.Millisecond, 7, "not logged", "not logged"}
	var names []string
	for _, a := range Attrs(full) {
		names = append(names, a.Key)
	}
	want := []string{"route", "runMs", "serialiseMs", "cpuMs", "event", "status", "retryable", "bytes", "took", "used"}
	if !slices.Equal(names, want) {
		t.Errorf("a full line writes %v, want %v", names, want)
	}
	if got := Fields(sample{}); !slices.Equal(got, want) {
		t.Errorf("Fields = %v, want %v", got, want)
	}

	var buf bytes.Buffer
	telemetry.NewLogger(&buf, slog.LevelInfo, "").LogAttrs(t.Context(), slog.LevelInfo, "m", Attrs(&sample{common: common{"/r"}})...)
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(maps.Keys(line))
	if want := []string{"message", "route", "severity", "status", "time", "took"}; !slices.Equal(got, want) {
		t.Errorf("an empty line writes %v, want %v: %s", got, want, buf.Bytes())
	}
	if line["took"] != "0s" || strings.Contains(buf.String(), "not logged") {
		t.Errorf("line %s", buf.Bytes())
	}
}

// A line's description has its message, its least level, its fields and
// the string fields its prototype sets.
func TestDescribe(t *testing.T) {
	d := Describe("killed", slog.LevelError, sample{Event: "hardKill"})
	if d.Message != "killed" || d.Level != slog.LevelError || !slices.Equal(d.Fields, Fields(sample{})) ||
		!maps.Equal(d.Values, map[string]string{"event": "hardKill"}) {
		t.Errorf("%+v", d)
	}
	if d := Describe("start-up failed", slog.LevelError, nil); d.Fields != nil || d.Values != nil {
		t.Errorf("a line without a prototype: %+v", d)
	}
}
