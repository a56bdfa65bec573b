package deploy

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/loom-plugins/sandbox-cloudrun/internal/logline"
	"github.com/loom-plugins/sandbox-cloudrun/service"
	"github.com/loom-plugins/sandbox-cloudrun/telemetry"
)

// logQuery is what a resource of the module reads of the service's log:
// a filter, and the expressions that extract a metric's value and labels
// from the lines it selects.
type logQuery struct {
	at       string // the resource, and its for_each key
	filter   string
	extracts []string
}

// logQueries reads, from every resource of the module in dir (each
// instance of a for_each), the attributes that read the log: filter,
// value_extractor and label_extractors, in the resource and its nested
// blocks. It fails where a string of the module names jsonPayload outside
// what it read, so that no filter escapes the check.
func logQueries(dir string) ([]logQuery, error) {
	m, err := readModule(dir)
	if err != nil {
		return nil, err
	}
	var out []logQuery
	for _, r := range m.resources() {
		if !readsLog(r) {
			continue
		}
		eaches := []*[2]any{nil}
		if fe, ok := r.attrs["for_each"]; ok {
			v, err := m.eval(fe, nil)
			if err != nil {
				return nil, err
			}
			obj, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: for_each over a %T: these tests read an object's", r.at, v)
			}
			eaches = nil
			for _, k := range slices.Sorted(mapsKeys(obj)) {
				eaches = append(eaches, &[2]any{k, obj[k]})
			}
		}
		for _, each := range eaches {
			q := logQuery{at: strings.Join(r.labels, ".") + " (" + r.at + ")"}
			if each != nil {
				q.at = fmt.Sprintf("%s[%q] (%s)", strings.Join(r.labels, "."), each[0], r.at)
			}
			var read func(b *block) error
			read = func(b *block) error {
				for _, name := range logAttributes {
					e, ok := b.attrs[name]
					if !ok {
						continue
					}
					v, err := m.eval(e, each)
					if err != nil {
						return err
					}
					switch v := v.(type) {
					case string:
						if name == "filter" {
							q.filter = strings.TrimSpace(strings.Join([]string{q.filter, v}, " "))
						} else {
							q.extracts = append(q.extracts, v)
						}
					case map[string]any:
						for _, k := range slices.Sorted(mapsKeys(v)) {
							s, err := text(v[k], e)
							if err != nil {
								return err
							}
							q.extracts = append(q.extracts, s)
						}
					default:
						return fmt.Errorf("%s: %s is a %T", e.pos(), name, v)
					}
				}
				for _, c := range b.blocks {
					if err := read(c); err != nil {
						return err
					}
				}
				return nil
			}
			if err := read(r); err != nil {
				return nil, err
			}
			if q.filter != "" || len(q.extracts) > 0 {
				out = append(out, q)
			}
		}
	}
	var unread []string
	for k, s := range m.strings {
		if strings.Contains(s, "jsonPayload") && !m.evaluated[k] {
			unread = append(unread, strings.SplitN(k, "#", 2)[0]+": "+strconv.Quote(s))
		}
	}
	if len(unread) > 0 {
		sort.Strings(unread)
		return nil, fmt.Errorf("strings that read the service's log where these tests do not read them (teach logQueries where):\n%s", strings.Join(unread, "\n"))
	}
	return out, nil
}

// logAttributes are the attributes by which a resource reads the log.
var logAttributes = []string{"filter", "value_extractor", "label_extractors"}

// readsLog says whether b or a block in it has an attribute that reads the
// log.
func readsLog(b *block) bool {
	for _, name := range logAttributes {
		if _, ok := b.attrs[name]; ok {
			return true
		}
	}
	return slices.ContainsFunc(b.blocks, readsLog)
}

func mapsKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

var (
	// a term of Cloud Logging's query language on a field of a structured
	// line: the field (and any path below it), the comparison and its value
	payloadRE = regexp.MustCompile(`jsonPayload\.([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z0-9_]+)*)(?:\s*(=~|!~|!=|>=|<=|=|:|<|>)\s*("(?:[^"\\]|\\.)*"|[^\s()]+))?`)
	// a filter's least severity
	severityRE = regexp.MustCompile(`\bseverity\s*(>=|=|>)\s*"?([A-Z]+)"?`)
)

// severityRank orders Cloud Logging's severities.
var severityRank = map[string]int{"DEFAULT": 0, "DEBUG": 100, "INFO": 200, "NOTICE": 300, "WARNING": 400,
	"ERROR": 500, "CRITICAL": 600, "ALERT": 700, "EMERGENCY": 800}

// terms are what a query reads of the service's lines: the messages its
// filter selects, the fields it selects by value when it names no message,
// every field it reads, and what of it these tests cannot read.
type terms struct {
	messages []string
	values   map[string]string
	fields   []string
	unread   []string
	severity []string // the comparison and the severity, when the filter has one
}

func (q logQuery) terms() terms {
	tm := terms{values: map[string]string{}}
	for _, m := range payloadRE.FindAllStringSubmatch(q.filter, -1) {
		field, sub, op, value := m[1], m[2], m[3], m[4]
		if sub != "" {
			tm.unread = append(tm.unread, fmt.Sprintf("the filter reads jsonPayload.%s%s, below a field: the service's lines are flat", field, sub))
			continue
		}
		if uq, err := strconv.Unquote(value); err == nil {
			value = uq
		}
		switch {
		case field == "message" && op == "=":
			tm.messages = append(tm.messages, value)
		case field == "message":
			tm.unread = append(tm.unread, fmt.Sprintf("the filter reads the message with %q: these tests read a message only as message=\"…\"", op))
		case op == "=":
			tm.values[field] = value
			tm.fields = append(tm.fields, field)
		default:
			tm.fields = append(tm.fields, field)
		}
	}
	for _, x := range q.extracts {
		for _, m := range payloadRE.FindAllStringSubmatch(x, -1) {
			if m[2] != "" {
				tm.unread = append(tm.unread, fmt.Sprintf("%s reads jsonPayload.%s%s, below a field: the service's lines are flat", x, m[1], m[2]))
				continue
			}
			tm.fields = append(tm.fields, m[1])
		}
	}
	if m := severityRE.FindStringSubmatch(q.filter); m != nil {
		tm.severity = m[1:]
	}
	return tm
}

// selects says whether a filter of these terms selects l: by its message,
// or, naming none, by the values of fields l always carries.
func (tm terms) selects(l logline.Line) bool {
	if len(tm.messages) > 0 {
		return slices.Contains(tm.messages, l.Message)
	}
	return len(tm.values) > 0 && len(l.Values) > 0 && all(tm.values, func(f, v string) bool { return l.Values[f] == v })
}

// checkQueries says, for each query, what it reads that the service does
// not write as lines describes it: a message no line has; a field and value
// no line always carries; a field that is no field of every line the query
// selects; a severity above the one a selected line is written at.
func checkQueries(queries []logQuery, lines []logline.Line) []string {
	var problems []string
	for _, q := range queries {
		bad := func(format string, args ...any) {
			problems = append(problems, q.at+": "+fmt.Sprintf(format, args...))
		}
		tm := q.terms()
		for _, u := range tm.unread {
			bad("%s", u)
		}
		if len(tm.messages) == 0 && len(tm.fields) == 0 {
			continue // reads nothing of the service's own lines
		}
		var selected []logline.Line
		for _, l := range lines {
			if tm.selects(l) {
				selected = append(selected, l)
			}
		}
		for _, msg := range tm.messages {
			if !slices.ContainsFunc(lines, func(l logline.Line) bool { return l.Message == msg }) {
				bad("the filter selects the message %q, which the service never writes", msg)
			}
		}
		if len(tm.messages) == 0 && len(selected) == 0 {
			bad("the filter selects its lines by %v, which no line of the service always carries", tm.values)
		}
		for _, l := range selected {
			for _, f := range tm.fields {
				if !slices.Contains(l.Fields, f) {
					bad("it reads jsonPayload.%s, which the service's %q line does not write (it writes %s)", f, l.Message, strings.Join(l.Fields, ", "))
				}
			}
			for f, v := range tm.values {
				if got, ok := l.Values[f]; ok && got != v {
					bad("the filter selects jsonPayload.%s=%q, but the service's %q line carries %q", f, v, l.Message, got)
				}
			}
			if tm.severity != nil {
				if written := telemetry.Severity(l.Level); severityRank[written] < severityRank[tm.severity[1]] {
					bad("the filter asks severity%s%s, but the service writes its %q line at %s", tm.severity[0], tm.severity[1], l.Message, written)
				}
			}
		}
	}
	return problems
}

func all(m map[string]string, f func(k, v string) bool) bool {
	for k, v := range m {
		if !f(k, v) {
			return false
		}
	}
	return true
}

// terraformDirs are the directories of .tf files: the module, its examples
// and any other, found, not listed.
func terraformDirs(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir("../terraform", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && p != "../terraform" {
			return filepath.SkipDir // .terraform: providers and modules tofu fetched
		}
		if !d.IsDir() && strings.HasSuffix(p, ".tf") {
			seen[filepath.Dir(p)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return slices.Sorted(func(yield func(string) bool) {
		for d := range seen {
			if !yield(d) {
				return
			}
		}
	})
}

// allQueries are the log queries of every directory of .tf files.
func allQueries(t *testing.T, dirs []string) []logQuery {
	t.Helper()
	var out []logQuery
	for _, dir := range dirs {
		qs, err := logQueries(dir)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		out = append(out, qs...)
	}
	return out
}

// TestLogFiltersReadWhatTheServiceWrites: the service's log is an
// interface, and Terraform's log-based metrics and alerts its readers.
// Every message and every jsonPayload field that a filter,
// value_extractor or label_extractors of a .tf file reads, OpenTofu's
// expressions evaluated, is one the service writes, on the lines the
// filter selects, at a severity the filter lets through: what the service
// writes is its own description of its lines (service.LogLines), each
// derived from the type of the line and the constant of its message in the
// package that writes it.
func TestLogFiltersReadWhatTheServiceWrites(t *testing.T) {
	queries := allQueries(t, terraformDirs(t))
	read := 0
	for _, q := range queries {
		if strings.Contains(q.filter+strings.Join(q.extracts, " "), "jsonPayload") {
			read++
			t.Logf("%s reads %s %v", q.at, q.filter, q.extracts)
		}
	}
	if read == 0 {
		t.Fatal("no query of the .tf files reads the service's lines: has the reader lost them?")
	}
	for _, p := range checkQueries(queries, service.LogLines()) {
		t.Error(p)
	}
}

// TestLogFilterCheckFailsOnEitherSide: the check fails when a field or a
// message that a filter reads changes on either side. On the service's
// side, each name a filter reads is renamed in the description of the
// lines, in turn, and each severity a filter asks is written one level
// lower; on Terraform's, each field or message a .tf file names is renamed
// in a copy of the module, in turn.
func TestLogFilterCheckFailsOnEitherSide(t *testing.T) {
	dirs := terraformDirs(t)
	queries := allQueries(t, dirs)
	lines := service.LogLines()

	read := map[string]bool{}
	for _, q := range queries {
		for _, s := range append([]string{q.filter}, q.extracts...) {
			for _, m := range payloadRE.FindAllStringSubmatch(s, -1) {
				read[m[1]] = true
				if m[1] == "message" {
					read["message="+m[4]] = true
				}
			}
		}
	}
	if len(read) == 0 {
		t.Fatal("no query reads the service's lines")
	}
	for name := range read {
		if name == "message" {
			continue // every structured line has its message
		}
		renamed := slices.Clone(lines)
		for i, l := range renamed {
			l.Fields = slices.Clone(l.Fields)
			if msg, ok := strings.CutPrefix(name, "message="); ok {
				if uq, err := strconv.Unquote(msg); err == nil && l.Message == uq {
					l.Message += " renamed"
				}
			}
			if v, ok := l.Values[name]; ok {
				l.Values = map[string]string{name + "Renamed": v}
			}
			if j := slices.Index(l.Fields, name); j >= 0 {
				l.Fields[j] = name + "Renamed"
			}
			renamed[i] = l
		}
		if len(checkQueries(queries, renamed)) == 0 {
			t.Errorf("renaming %s in the service's lines fails no query", name)
		}
	}
	lowered := 0
	for i, l := range lines {
		asked := slices.ContainsFunc(queries, func(q logQuery) bool { tm := q.terms(); return tm.severity != nil && tm.selects(l) })
		if !asked {
			continue
		}
		lower := slices.Clone(lines)
		lower[i].Level = slog.LevelInfo
		lowered++
		if len(checkQueries(queries, lower)) == 0 {
			t.Errorf("writing the %q line at %s fails no query that asks its severity", l.Message, telemetry.Severity(lower[i].Level))
		}
	}
	if lowered == 0 {
		t.Error("no query asks a severity of the lines it selects: has the pattern lost them?")
	}

	// Terraform's side: every field and message a string of a .tf file
	// names, renamed in a copy of its directory
	names := regexp.MustCompile(`jsonPayload\.(message=\\"[^\\]*\\"|[A-Za-z_][A-Za-z0-9_]*)|field += "([A-Za-z0-9_]+)"`)
	renames := 0
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.tf"))
		for _, f := range files {
			src := readFile(t, f)
			for _, loc := range names.FindAllStringSubmatchIndex(src, -1) {
				start, end := loc[2], loc[3]
				if start < 0 {
					start, end = loc[4], loc[5]
				}
				name := src[start:end]
				if name == "message" {
					continue
				}
				renamed := src[:end] + "Renamed" + src[end:]
				if strings.HasPrefix(name, "message=") {
					renamed = src[:end-2] + " renamed" + src[end-2:]
				}
				copyDir := t.TempDir()
				for _, g := range files {
					body := readFile(t, g)
					if g == f {
						body = renamed
					}
					if err := os.WriteFile(filepath.Join(copyDir, filepath.Base(g)), []byte(body), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				qs, err := logQueries(copyDir)
				if err != nil {
					t.Fatalf("%s with %s renamed: %v", f, name, err)
				}
				renames++
				if len(checkQueries(qs, lines)) == 0 {
					t.Errorf("renaming %s in %s fails no query", name, f)
				}
			}
		}
	}
	if renames == 0 {
		t.Fatal("no name of a .tf file was renamed: has the pattern lost them?")
	}
	t.Logf("%d names renamed on the service's side, %d on Terraform's", len(read), renames)
}

// TestLogQueriesMissNothing: the reader of the .tf files fails, rather than
// pass a filter by, where a string names jsonPayload outside the
// attributes it reads (a dashboard's logs panel), and where a filter is an
// expression it cannot evaluate; a log-match alert's nested filter it reads.
func TestLogQueriesMissNothing(t *testing.T) {
	for _, tc := range []struct {
		name, tf, fails string
	}{
		{"a logs panel of a dashboard", `resource "google_monitoring_dashboard" "d" {
  dashboard_json = jsonencode({ logsPanel = { filter = "jsonPayload.message=\"evaluation\"" } })
}
`, "where these tests do not read them"},
		{"a filter made by a function the reader does not know", `resource "google_logging_metric" "m" {
  filter = format("jsonPayload.%s=\"x\"", "event")
}
`, "the function format"},
		{"a log-match alert", `resource "google_monitoring_alert_policy" "a" {
  conditions {
    condition_matched_log {
      filter = "jsonPayload.message=\"no such line\""
    }
  }
}
`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(tc.tf), 0o644); err != nil {
				t.Fatal(err)
			}
			qs, err := logQueries(dir)
			switch {
			case tc.fails != "" && (err == nil || !strings.Contains(err.Error(), tc.fails)):
				t.Errorf("read %v, %v; want an error saying %q", qs, err, tc.fails)
			case tc.fails == "" && err != nil:
				t.Fatal(err)
			case tc.fails == "" && len(checkQueries(qs, service.LogLines())) == 0:
				t.Errorf("the alert's filter %v passed the check", qs)
			}
		})
	}
}
