// Package batchresult is the file bench/cmd/batch writes to
// OUT/batch.json and bench/cmd/cost -batch prices: one definition of its
// shape for both.
package batchresult

import "fmt"

// Result is OUT/batch.json.
type Result struct {
	Version string `json:"version"` // the binary's `version` output
	Reps    int    `json:"reps"`
	// MaxConcurrent is the server's MAX_CONCURRENT_EVALUATIONS: how many
	// inputs of a batch run at once.
	MaxConcurrent int `json:"maxConcurrent"`
	// LoadAvg is /proc/loadavg's first three fields at the start and at
	// the end of the run.
	LoadAvg []string   `json:"loadAvg"`
	Seconds float64    `json:"seconds"`
	Rows    []*Measure `json:"rows"`
}

// Measure is one workload sent one way (single requests, or batches of
// one size), over all repetitions.
type Measure struct {
	Workload   string `json:"workload"`
	InputBytes int    `json:"inputBytes"`
	// Batch is the inputs per request; 0 for single POST /v1/evaluations
	// requests.
	Batch int `json:"batch"`
	// Evaluations and Requests are per repetition.
	Evaluations int `json:"evaluations"`
	Requests    int `json:"requests"`
	// Per repetition: evaluations per second of the client's wall time,
	// the server tree's CPU (user + system) per evaluation in
	// milliseconds, and the median request's wall time in milliseconds.
	RepEvalsPerSec []float64 `json:"repEvalsPerSec"`
	RepCPUMs       []float64 `json:"repCpuMsPerEval"`
	RepRequestMs   []float64 `json:"repRequestMs"`
	// RepServerCPUMs is the part of RepCPUMs the server process used
	// itself; the rest is its worker processes', which run the guests.
	RepServerCPUMs []float64 `json:"repServerCpuMsPerEval"`
	// The medians over the repetitions.
	EvalsPerSec        float64 `json:"evalsPerSec"`
	CPUMsPerEval       float64 `json:"cpuMsPerEval"`
	RequestMs          float64 `json:"requestMs"`
	ServerCPUMsPerEval float64 `json:"serverCpuMsPerEval"`
}

// Name is how the tables name the way the evaluations were sent.
func (m *Measure) Name() string {
	if m.Batch == 0 {
		return "single requests"
	}
	return fmt.Sprintf("batches of %d", m.Batch)
}
