// Package benchhost is what the benchmark commands that start the service
// share about the host they run on: the environment a measured server
// starts with, and the load average a run reports beside its figures; and
// how they summarise their repetitions (Median, Round3).
package benchhost

import (
	"os"
	"strings"
)

// BaseEnv is the environment a measured server starts with: none of the
// service's own variables from the caller's environment, so that only
// what a phase sets differs from the service's defaults.
func BaseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "HOME", "TMPDIR", "GOMAXPROCS", "GOGC", "GOMEMLIMIT", "GODEBUG":
			env = append(env, kv)
		}
	}
	return append(env, "LOG_LEVEL=info", "OTEL_EXPORTER=none")
}

// LoadAvg is the host's load average over 1, 5 and 15 minutes, as
// /proc/loadavg says it, or "?" where there is none.
func LoadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
