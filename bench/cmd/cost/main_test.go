package main

import (
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/loom-plugins/sandbox-cloudrun/bench/batchresult"
)

// The prices docs/cost.md shows follow from the measured wall time and the
// prices: an evaluation alone is billed 100 ms, a busy instance its wall
// time, and instance-based billing the instance's seconds with no request
// fee.
func TestReportArithmetic(t *testing.T) {
	p := prices{cpu: 0.000024, mem: 0.0000025, perMillionRequests: 0.40, idleCPU: 0.0000025, idleMem: 0.0000025, alwaysCPU: 0.000018, alwaysMem: 0.000002}
	rows := []row{
		{name: "fast", outcome: "ok", wall: dist{p50: 1}, memory: 1 << 20},   // 1 ms
		{name: "slow", outcome: "ok", wall: dist{p50: 250}, memory: 1 << 20}, // 250 ms: billed 300 ms alone
	}
	var b strings.Builder
	report(&b, rows, dist{p50: 80, p95: 90}, 300, 1, 1, p)
	out := b.String()
	for _, want := range []string{
		// 1e6 × 0.1 s × (0.000024 + 0.0000025) + 0.40; 1e6 × 0.001 s × … + 0.40; 1e6 × 0.001 × 0.00002
		"| fast | 1000 | 3.05 | 0.43 | 0.02 |",
		// 1e6 × 0.3 s × 0.0000265 + 0.40 = 8.35; 1e6 × 0.25 × 0.0000265 + 0.40 = 7.03; 1e6 × 0.25 × 0.00002 = 5.00
		"| slow | 4 | 8.35 | 7.03 | 5.00 |",
		// 30 days × (0.0000025 + 0.0000025) per second; × (0.000018 + 0.000002)
		"12.96 USD idle under request-based billing, 51.84 USD under instance-based billing",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
}

// The instance the prices are for is, unless a flag says otherwise, the one
// the Terraform module makes by default.
func TestDefaultsAreTheModules(t *testing.T) {
	b, err := os.ReadFile("../../../terraform/variables.tf")
	if err != nil {
		t.Fatal(err)
	}
	def := func(name string) string {
		m := regexp.MustCompile(`(?s)variable "` + name + `" \{.*?\n\s*default\s*=\s*"([^"]*)"`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("terraform/variables.tf has no default of %s", name)
		}
		return string(m[1])
	}
	if got := def("cpu"); got != strconv.Itoa(moduleVCPU) {
		t.Errorf("the module's cpu is %q, -vcpu defaults to %d", got, moduleVCPU)
	}
	mem := def("memory")
	gib, ok := strings.CutSuffix(mem, "Gi")
	if !ok {
		mib, _ := strings.CutSuffix(mem, "Mi")
		n, _ := strconv.Atoi(mib)
		gib = strconv.FormatFloat(float64(n)/1024, 'g', -1, 64)
	}
	if gib != strconv.FormatFloat(moduleMemGiB, 'g', -1, 64) {
		t.Errorf("the module's memory is %q (%s GiB), -memory-gib defaults to %g", mem, gib, float64(moduleMemGiB))
	}
}

// A batch is one billed request: its fee and its time, rounded up to
// 100 ms when it comes alone, are shared by its evaluations.
func TestBatchArithmetic(t *testing.T) {
	p := prices{cpu: 0.000024, mem: 0.0000025, perMillionRequests: 0.40, alwaysCPU: 0.000018, alwaysMem: 0.000002}
	res := &batchresult.Result{Reps: 3, LoadAvg: []string{"1.00 1.00 1.00", "2.00 1.00 1.00"}, Rows: []*batchresult.Measure{
		{Workload: "echo", Batch: 0, RequestMs: 1, EvalsPerSec: 1000},
		{Workload: "echo", Batch: 100, RequestMs: 40, EvalsPerSec: 2500},
		{Workload: "echo", Batch: 1000, RequestMs: 300, EvalsPerSec: 3333},
	}}
	var b strings.Builder
	if err := batchReport(&b, res, 1, 1, p); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		// as TestReportArithmetic's fast row: 3.05, 0.4265, 0.02
		"| echo | single requests | 1.000 | 100 | 1000 | 3.0500 | 1.0000 | 0.4265 | 0.0200 |",
		// 1e4 requests × (0.1 s × 0.0000265 + 0.40e-6) = 0.0305, a hundredth of single;
		// 1e4 × (0.04 × 0.0000265 + 0.40e-6) = 0.0146; 1e4 × 0.04 × 0.00002 = 0.008
		"| echo | batches of 100 | 40.000 | 100 | 2500 | 0.0305 | 0.0100 | 0.0146 | 0.0080 |",
		// a request of exactly 300 ms is billed 300 ms
		"| echo | batches of 1000 | 300.000 | 300 | 3333 |",
		"load average 1.00 1.00 1.00 at the start, 2.00 1.00 1.00 at the end",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the batch report lacks %q:\n%s", want, out)
		}
	}

	noSingle := &batchresult.Result{LoadAvg: []string{"?"}, Rows: res.Rows[1:]}
	if err := batchReport(io.Discard, noSingle, 1, 1, p); err == nil {
		t.Error("batches without single requests to set them beside were priced")
	}
	unmeasured := &batchresult.Result{LoadAvg: []string{"?"}, Rows: []*batchresult.Measure{{Workload: "echo"}}}
	if err := batchReport(io.Discard, unmeasured, 1, 1, p); err == nil {
		t.Error("a row with no measured time was priced")
	}
}

// Request-based billing counts a request alone as at least 100 ms, rounded
// up to the next 100 ms.
func TestBilled(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{{0.001, 0.1}, {0.1, 0.1}, {0.1001, 0.2}, {0.25, 0.3}, {0.3, 0.3}, {0.7, 0.7}, {4.6530, 4.7}} {
		if got := billed(c.in); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("billed(%g) = %g, want %g", c.in, got, c.want)
		}
	}
}
