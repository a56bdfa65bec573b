package service

import (
	"slices"
	"strings"
)

// Lookalike is an environment variable that the service does not read but
// whose name is close to one it does: most likely a misspelt setting, which
// would otherwise leave its default in force without a word.
type Lookalike struct {
	// Name is the variable as set; Known the variable it resembles most.
	Name, Known string
}

func (l Lookalike) String() string {
	return "the environment variable " + l.Name + " is not a setting of this service and is ignored: did you mean " + l.Known + "?"
}

// Lookalikes finds, among environ's variables ("NAME=value", as
// os.Environ gives them), the ones the service does not read whose names
// are within a small edit distance of a name it does, ignoring case: 1 for
// a name under 8 characters (PORT: HOST and POST are other programs'), 2
// otherwise. The platform and the OS set many variables: none of theirs is
// that close to one of the service's. Only names are looked at, never
// values, which may be secrets.
func Lookalikes(environ []string) []Lookalike {
	known := Variables()
	var out []Lookalike
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if name == "" || slices.Contains(known, name) {
			continue
		}
		best, bestDist := "", -1
		for _, k := range known {
			limit := 2
			if len(k) < 8 {
				limit = 1
			}
			d := editDistance(strings.ToUpper(name), k, limit)
			if d <= limit && (bestDist < 0 || d < bestDist) {
				best, bestDist = k, d
			}
		}
		if best != "" {
			out = append(out, Lookalike{Name: name, Known: best})
		}
	}
	return out
}

// editDistance is the Levenshtein distance between a and b (bytes), or
// limit+1 once it is sure to exceed limit.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d > limit || -d > limit {
		return limit + 1
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			return limit + 1
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
