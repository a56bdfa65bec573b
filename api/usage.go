package api

import (
	"math"
	"strconv"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// The usage member of both evaluation answers (docs/spi.md, "Usage"):
//
//	"usage": {"phasesMs": {"fetch": …, "verify": …, "setup": …, "run": …, "serialise": …},
//	          "cpuMs": …, "cpuBudgetUsed": …, "cpuBudget": …,
//	          "peakMemoryBytes": …, "memoryLimitBytes": …}
//
// Times are milliseconds with microseconds as their fraction; counts and
// bytes are integers. Every member is always written, zero for a step the
// run did not reach or a figure its engine does not measure.

// AppendUsage writes u as the usage member's object.
func AppendUsage(dst []byte, u spi.Usage) []byte {
	dst = append(dst, `{"phasesMs":{`...)
	for i, p := range u.Phases() {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(jsontext.AppendQuote(dst, p.Name), ':')
		dst = appendMillis(dst, *p.D)
	}
	dst = appendMillis(append(dst, `},"cpuMs":`...), u.CPU)
	dst = strconv.AppendUint(append(dst, `,"cpuBudgetUsed":`...), u.CPUBudgetUsed, 10)
	dst = strconv.AppendUint(append(dst, `,"cpuBudget":`...), u.CPUBudget, 10)
	dst = strconv.AppendInt(append(dst, `,"peakMemoryBytes":`...), u.PeakMemoryBytes, 10)
	dst = strconv.AppendInt(append(dst, `,"memoryLimitBytes":`...), u.MemoryLimitBytes, 10)
	return append(dst, '}')
}

// appendMillis writes d in milliseconds, to the microsecond.
func appendMillis(dst []byte, d time.Duration) []byte {
	return strconv.AppendFloat(dst, float64(max(d, 0).Microseconds())/1000, 'f', -1, 64)
}

// readUsage reads the usage member of an answer, when present: the members
// AppendUsage writes, each required and checked, and any other member, in
// usage or in its phases, a figure of a later version, ignored
// (docs/spi.md, "How the wire evolves").
func readUsage(obj *jsontext.Object) *spi.Usage {
	o, present := obj.Child("usage", false)
	if !present {
		return nil
	}
	var u spi.Usage
	if p, ok := o.Child("phasesMs", true); ok {
		for _, phase := range u.Phases() {
			*phase.D = readMillis(p, phase.Name)
		}
		p.Skip()
		o.Adopt(p.Done())
	}
	u.CPU = readMillis(o, "cpuMs")
	n, _ := o.Count("cpuBudgetUsed", true)
	u.CPUBudgetUsed = uint64(n)
	n, _ = o.Count("cpuBudget", true)
	u.CPUBudget = uint64(n)
	u.PeakMemoryBytes, _ = o.Count("peakMemoryBytes", true)
	u.MemoryLimitBytes, _ = o.Count("memoryLimitBytes", true)
	o.Skip()
	obj.Adopt(o.Done())
	return &u
}

// readMillis reads a required, non-negative number of milliseconds.
func readMillis(o *jsontext.Object, key string) time.Duration {
	raw, ok := o.Take(key, true)
	if !ok {
		return 0
	}
	ms, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || raw[0] == '-' || math.IsInf(ms, 0) || ms > float64(math.MaxInt64/int64(time.Millisecond)) {
		o.Fail(key, "must be a non-negative number of milliseconds, got %s", jsontext.ShowValue(raw))
		return 0
	}
	return time.Duration(math.Round(ms*1000)) * time.Microsecond
}
