package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
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
