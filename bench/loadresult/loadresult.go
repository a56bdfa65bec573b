// Package loadresult is the summary bench/cmd/load writes to
// OUT/service.json and bench/cmd/report reads: one definition of the file's
// shape for both.
package loadresult

// Summary is the whole output, written as JSON to OUT/service.json: the
// figures of the -bin binary and, with -baseline, those of the baseline.
type Summary struct {
	Label           string       `json:"label,omitempty"`
	Version         string       `json:"version,omitempty"` // the binary's `version` output
	Binary          string       `json:"binary"`
	Started         string       `json:"started"`
	Rounds          int          `json:"rounds"`
	HTTP            []*Cell      `json:"http,omitempty"`
	Servers         []ServerInfo `json:"servers,omitempty"`
	CompileCacheMs  float64      `json:"compileCacheMs,omitempty"`
	Cold            []ColdRun    `json:"cold,omitempty"`
	Memory          *MemoryRun   `json:"memory,omitempty"`
	MemoryWithCache bool         `json:"memoryWithCache,omitempty"`
	Seconds         float64      `json:"seconds"`
	// LoadAvg is /proc/loadavg's first three fields at the start and at
	// the end of the run.
	LoadAvg []string `json:"loadAvg,omitempty"`
	// Baseline is the -baseline binary, measured in the same run.
	Baseline *Summary `json:"baseline,omitempty"`
}

// Cell is one configuration and workload of the http phase, over all rounds.
type Cell struct {
	Config        string    `json:"config"`
	MaxConcurrent int       `json:"maxConcurrent"`
	ProcessKill   bool      `json:"processKill"`
	Clients       int       `json:"clients"`
	Workload      string    `json:"workload"`
	GapMs         float64   `json:"gapMs,omitempty"`
	InputBytes    int       `json:"inputBytes"`
	Requests      int       `json:"requests"`
	Errors        int       `json:"errors"`
	Refused       int       `json:"refused"` // 429 busy, retried
	Seconds       float64   `json:"seconds"`
	RPS           float64   `json:"rps"`
	RoundRPS      []float64 `json:"roundRps"`
	RoundP50      []float64 `json:"roundP50"`
	P50           float64   `json:"p50"`
	P90           float64   `json:"p90"`
	P99           float64   `json:"p99"`
	P999          float64   `json:"p999"`
	Max           float64   `json:"max"`
	// From the service's log lines (evaluations only): medians.
	Logged      int     `json:"logged"`
	TotalP50    float64 `json:"totalP50"`
	FetchP50    float64 `json:"fetchP50"`
	EvaluateP50 float64 `json:"evaluateP50"`
	EvaluateP90 float64 `json:"evaluateP90"`
	HandlerP50  float64 `json:"handlerP50"` // median of totalMs - fetchMs - evaluateMs per line
	TotalP99    float64 `json:"totalP99"`
}

// ServerInfo is a server of the http phase: its memory at the end. RSSIdle,
// RSSEnd and HWM are the server process's; the trees are the server and its
// workers.
type ServerInfo struct {
	Config   string   `json:"config"`
	RSSIdle  int64    `json:"rssIdleKiB"`
	RSSEnd   int64    `json:"rssEndKiB"`
	HWM      int64    `json:"hwmKiB"`
	TreeIdle *TreeMem `json:"treeIdle,omitempty"`
	TreeEnd  *TreeMem `json:"treeEnd,omitempty"`
}

// ColdRun is one start of the process.
type ColdRun struct {
	Cache        bool     `json:"cache"`
	FirstEvalMs  float64  `json:"firstEvalMs"`
	ListenMs     float64  `json:"listenMs"`
	Attempts     int      `json:"attempts"`
	RSSIdleKiB   int64    `json:"rssIdleKiB"` // the server process's
	WarmLoggedMs float64  `json:"warmLoggedMs"`
	Tree         *TreeMem `json:"tree,omitempty"` // 1 s after the first evaluation
}

// MemoryRun is the memory phase.
type MemoryRun struct {
	Evaluations int   `json:"evaluations"`
	RSSIdleKiB  int64 `json:"rssIdleKiB"` // the server process, 1 s after ready
	HWMIdleKiB  int64 `json:"hwmIdleKiB"`
	// Start is the tree 1 s after ready; Idle after IdleEvals more
	// evaluations (half echo, half the 16 KiB reshape), settled; End
	// after the Evaluations.
	Start     *TreeMem   `json:"start,omitempty"`
	IdleEvals int        `json:"idleEvals,omitempty"`
	Idle      *TreeMem   `json:"idle,omitempty"`
	End       *TreeMem   `json:"end,omitempty"`
	Samples   []MemPoint `json:"samples"`
	Seconds   float64    `json:"seconds"`
	Errors    int        `json:"errors"`
}

// MemPoint is the memory after a number of evaluations: RSSKiB and HWMKiB
// the server process's, the Tree fields the totals over the server and its
// workers.
type MemPoint struct {
	After      int   `json:"after"`
	RSSKiB     int64 `json:"rssKiB"`
	HWMKiB     int64 `json:"hwmKiB"`
	Procs      int   `json:"procs"`
	TreeRSSKiB int64 `json:"treeRssKiB"`
	TreePSSKiB int64 `json:"treePssKiB"`
	TreeHWMKiB int64 `json:"treeHwmKiB"`
}

// ProcMem is the memory of one process of a server's tree.
type ProcMem struct {
	Pid  int    `json:"pid"`
	Role string `json:"role"` // "server", "worker" (the __sandbox-worker verb), or the process's first argument
	// VmRSS and VmHWM from /proc/PID/status; Pss, Pss_Anon and Pss_File
	// from /proc/PID/smaps_rollup (0 when it cannot be read). RSS counts
	// every resident page the process maps, so the binary's text, shared
	// by the server and its workers, is counted once per process; PSS
	// divides each shared page among the processes that map it.
	RSSKiB     int64 `json:"rssKiB"`
	HWMKiB     int64 `json:"hwmKiB"`
	PSSKiB     int64 `json:"pssKiB"`
	PSSAnonKiB int64 `json:"pssAnonKiB"`
	PSSFileKiB int64 `json:"pssFileKiB"`
}

// TreeMem is a server and all its descendants at one moment, and their
// totals.
type TreeMem struct {
	Procs      []ProcMem `json:"procs"`
	RSSKiB     int64     `json:"rssKiB"`
	HWMKiB     int64     `json:"hwmKiB"`
	PSSKiB     int64     `json:"pssKiB"`
	PSSAnonKiB int64     `json:"pssAnonKiB"`
	PSSFileKiB int64     `json:"pssFileKiB"`
}
