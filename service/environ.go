package service

import (
	"slices"
	"strings"
	"unicode"
)

// Lookalike is an environment variable that the service does not read but
// whose name is close to one it does: most likely a misspelt setting, which
// would otherwise leave its default in force without a word.
type Lookalike struct {
	// Name is the variable as set; Known the variable it resembles most.
	Name, Known string
	// Form is what a value of Known is, with its default as the example:
	// "a duration with a unit (ms, s, m, h), such as 30s"; empty for a
	// setting of any text without a default (BULK_INPUTS).
	Form string
}

func (l Lookalike) String() string {
	s := "the environment variable " + l.Name + " is not a setting of this service and is ignored: did you mean " + l.Known
	if l.Form != "" {
		s += ", " + l.Form
	}
	return s + "?"
}

// Lookalikes finds, among environ's variables ("NAME=value", as
// os.Environ gives them), the ones the service does not read whose names
// name one of its settings in another spelling. Two kinds of name are:
//
//   - one with the same words as a setting (sameWords), in any case, order
//     or separation, with or without a unit: MAX_WALL_CLOCK_MS,
//     WALL_CLOCK_MAX, maxWallClockMs (the API's name for the setting),
//     MAX_MEMORY;
//   - one a letter or two from a setting, ignoring case: within an edit
//     distance of 1 of a name under 8 characters (PORT: HOST and POST are
//     other programs'), 2 of a longer one: MAX_CONCURENT_EVALUATIONS.
//
// The platform and the OS set many variables: none of theirs is either.
// Only names are looked at, never values, which may be secrets.
func Lookalikes(environ []string) []Lookalike {
	rows := settings()
	byWords := map[string]setting{}
	for _, r := range rows {
		byWords[sameWords(r.name)] = r
	}
	var out []Lookalike
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if name == "" || slices.ContainsFunc(rows, func(r setting) bool { return r.name == name }) {
			continue
		}
		best, found := byWords[sameWords(name)]
		bestDist := -1
		for _, r := range rows {
			if found {
				break
			}
			limit := 2
			if len(r.name) < 8 {
				limit = 1
			}
			d := editDistance(strings.ToUpper(name), r.name, limit)
			if d <= limit && (bestDist < 0 || d < bestDist) {
				best, bestDist = r, d
			}
		}
		if found || bestDist >= 0 {
			out = append(out, Lookalike{Name: name, Known: best.name, Form: best.form(best.def)})
		}
	}
	return out
}

// sameWords is the key under which two names are the same words: their
// words (split at anything but letters and digits, and where a lower-case
// letter or digit meets an upper-case one, as in maxWallClockMs), in lower
// case, each once, sorted, without the words that only name a unit. A
// name of no words but units has none.
func sameWords(name string) string {
	var words []string
	word := []rune{}
	end := func() {
		if w := strings.ToLower(string(word)); w != "" && !unitWords[w] {
			words = append(words, w)
		}
		word = word[:0]
	}
	runes := []rune(name)
	for i, r := range runes {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			end()
			continue
		case i > 0 && unicode.IsUpper(r) && (unicode.IsLower(runes[i-1]) || unicode.IsDigit(runes[i-1])):
			end()
		}
		word = append(word, r)
	}
	end()
	slices.Sort(words)
	return strings.Join(slices.Compact(words), " ")
}

// unitWords are the words that name a unit a setting's value might be
// given in: a name that adds or drops one (MAX_WALL_CLOCK_MS,
// MAX_MEMORY) names the same setting. MIN is not one: it names a minimum.
var unitWords = map[string]bool{
	"ns": true, "us": true, "ms": true, "msec": true, "msecs": true, "millis": true,
	"millisecond": true, "milliseconds": true, "s": true, "sec": true, "secs": true,
	"second": true, "seconds": true, "minute": true, "minutes": true, "hour": true, "hours": true,
	"b": true, "byte": true, "bytes": true, "kb": true, "kib": true, "mb": true, "mib": true,
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
