package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// Every ProblemType constant has its row in problemSpecs, so that
// NewProblem never meets a type it cannot answer with.
func TestEveryProblemTypeHasASpec(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "problem.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "ProblemType" {
				continue
			}
			for i, name := range v.Names {
				n++
				slug, _ := strconv.Unquote(v.Values[i].(*ast.BasicLit).Value)
				if _, ok := problemSpecs[ProblemType(slug)]; !ok {
					t.Errorf("%s (%q) has no row in problemSpecs", name.Name, slug)
				}
			}
		}
	}
	if n != len(problemSpecs) {
		t.Errorf("%d ProblemType constants, %d rows in problemSpecs", n, len(problemSpecs))
	}
}

// docSection is a problem type's section of docs/problems.md.
type docSection struct {
	group, text string // group is the "## " heading the section is under
}

// docSections reads the "### type" sections of docs/problems.md.
func docSections(doc string) map[ProblemType]docSection {
	sections := map[ProblemType]docSection{}
	var group string
	var cur ProblemType
	for line := range strings.Lines(doc) {
		switch {
		case strings.HasPrefix(line, "## "):
			group, cur = strings.TrimSpace(line[3:]), ""
		case strings.HasPrefix(line, "### "):
			cur = ProblemType(strings.TrimSpace(line[4:]))
			sections[cur] = docSection{group: group}
		case cur != "":
			s := sections[cur]
			s.text += line
			sections[cur] = s
		}
	}
	return sections
}

// docRetryable is what a text says of a type's retryability: "" when it
// says nothing.
func docRetryable(text string) string {
	switch {
	case regexp.MustCompile(`not retryable|retryable: false`).MatchString(text):
		return "no"
	case strings.Contains(text, "retryable"):
		return "yes"
	}
	return ""
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// docs/problems.md and api/openapi.yaml say what problemSpecs says: its
// table of types and each type's section state the table's status, title,
// retryability and Retry-After, and the OpenAPI document lists each type
// under its status, says whether it is retryable, and declares Retry-After
// where the type carries it.
func TestProblemSpecsAreDocumented(t *testing.T) {
	raw, err := os.ReadFile("../docs/problems.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	types := slices.Sorted(maps.Keys(problemSpecs))

	// The table of types: one row a type, as problemSpecs has it.
	rows := map[ProblemType][]string{}
	for _, m := range regexp.MustCompile(`(?m)^\| \[([a-z-]+)\]\(#([a-z-]+)\) \|(.*)\|$`).FindAllStringSubmatch(doc, -1) {
		typ := ProblemType(m[1])
		if m[2] != m[1] {
			t.Errorf("docs/problems.md: the row of %s links to #%s", typ, m[2])
		}
		if _, twice := rows[typ]; twice {
			t.Errorf("docs/problems.md: %s has two rows", typ)
		}
		cells := strings.Split(m[3], "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows[typ] = cells
	}
	for typ := range rows {
		if _, ok := problemSpecs[typ]; !ok {
			t.Errorf("docs/problems.md: the table has %s, which problemSpecs lacks", typ)
		}
	}
	sections := docSections(doc)
	for typ := range sections {
		if _, ok := problemSpecs[typ]; !ok {
			t.Errorf("docs/problems.md documents %s, which the service never sends", typ)
		}
	}
	for _, typ := range types {
		s := problemSpecs[typ]
		retryAfter := ""
		if s.RetryAfter > 0 {
			retryAfter = strconv.Itoa(s.RetryAfter)
		}
		want := []string{strconv.Itoa(s.Status), s.Title, yesNo(s.Retryable), retryAfter}
		if got, ok := rows[typ]; !ok {
			t.Errorf("docs/problems.md: the table has no row for %s", typ)
		} else if !slices.Equal(got, want) {
			t.Errorf("docs/problems.md: the row of %s says %q, problemSpecs %q (status, title, retryable, Retry-After)", typ, got, want)
		}

		sec, ok := sections[typ]
		if !ok {
			t.Errorf("docs/problems.md has no section %q", "### "+typ)
			continue
		}
		if m := regexp.MustCompile("`([1-5][0-9][0-9])`").FindStringSubmatch(sec.text); m == nil || m[1] != want[0] {
			t.Errorf("docs/problems.md: the section of %s does not open with its status %d", typ, s.Status)
		}
		if g := regexp.MustCompile(`\(([1-5])xx`).FindStringSubmatch(sec.group); g == nil || g[1] != want[0][:1] {
			t.Errorf("docs/problems.md: %s (%d) is under %q", typ, s.Status, sec.group)
		}
		if r := docRetryable(sec.text); r != "" && r != yesNo(s.Retryable) {
			t.Errorf("docs/problems.md: the section of %s says retryable %s, problemSpecs %s", typ, r, yesNo(s.Retryable))
		}
		if strings.Contains(sec.text, "Retry-After") != (s.RetryAfter > 0) {
			t.Errorf("docs/problems.md: the section of %s mentions Retry-After: %v; problemSpecs gives it %d s",
				typ, strings.Contains(sec.text, "Retry-After"), s.RetryAfter)
		}
		if m := regexp.MustCompile("`Retry-After: ([0-9]+)`").FindStringSubmatch(sec.text); m != nil && m[1] != retryAfter {
			t.Errorf("docs/problems.md: the section of %s says Retry-After %s, problemSpecs %d", typ, m[1], s.RetryAfter)
		}
	}
	// A group heading that names its only retryable types.
	for _, m := range regexp.MustCompile(`(?m)^## (.*only (.*) are retryable.*)$`).FindAllStringSubmatch(doc, -1) {
		named := strings.FieldsFunc(strings.ReplaceAll(m[2], " and ", ","), func(r rune) bool { return r == ',' || r == ' ' })
		var retryable []string
		for typ, sec := range sections {
			if sec.group == m[1] && problemSpecs[typ].Retryable {
				retryable = append(retryable, string(typ))
			}
		}
		slices.Sort(named)
		slices.Sort(retryable)
		if !slices.Equal(named, retryable) {
			t.Errorf("docs/problems.md: %q names %v; the retryable types under it are %v", m[1], named, retryable)
		}
	}

	checkOpenAPIProblems(t, types)
}

// checkOpenAPIProblems holds api/openapi.yaml's problem responses to
// problemSpecs. A type is named by its slug in a response's description;
// the mention counts for the status the response is listed under, or for
// the status written just before it ("404 (not-found)"), which a response
// no status lists must do. Each mention follows a "Retryable:" or "Not
// retryable:" that says what a retry can do. A type that carries Retry-After
// is named in a response that requires the header, or, where the header is
// optional, as "(type, with `Retry-After`".
func checkOpenAPIProblems(t *testing.T, types []ProblemType) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	type response struct {
		description string
		statuses    map[int]bool // the statuses it is listed under
		// retryAfter is whether it declares a Retry-After header, and
		// whether a required one
		retryAfter, retryAfterRequired bool
	}
	responses := map[*openapi3.Response]*response{}
	add := func(ref *openapi3.ResponseRef, status int) {
		r := responses[ref.Value]
		if r == nil {
			r = &response{statuses: map[int]bool{}}
			if ref.Value.Description != nil {
				r.description = *ref.Value.Description
			}
			if h := ref.Value.Headers["Retry-After"]; h != nil {
				r.retryAfter, r.retryAfterRequired = true, h.Value.Required
			}
			responses[ref.Value] = r
		}
		if status >= 400 {
			r.statuses[status] = true
		}
	}
	for _, ref := range doc.Components.Responses {
		add(ref, 0)
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for code, ref := range op.Responses.Map() {
				status, err := strconv.Atoi(code)
				if err != nil {
					t.Fatalf("openapi.yaml: response %q", code)
				}
				add(ref, status)
			}
		}
	}

	label := regexp.MustCompile(`\b([Nn]ot )?[Rr]etryable( as is)?:`)
	statuses := map[ProblemType]map[int]bool{}
	for _, r := range responses {
		labels := label.FindAllStringSubmatchIndex(r.description, -1)
		for _, typ := range types {
			mention := regexp.MustCompile(`(?:([1-5][0-9][0-9]) \(?)?\b(` + regexp.QuoteMeta(string(typ)) + `)(?:[^a-z-]|$)`)
			for _, m := range mention.FindAllStringSubmatchIndex(r.description, -1) {
				start := m[0]
				if m[2] >= 0 {
					start = m[2]
				} else if start > 0 && r.description[start-1] == '-' {
					continue // a longer slug that ends in this one
				}
				if statuses[typ] == nil {
					statuses[typ] = map[int]bool{}
				}
				if m[2] >= 0 {
					n, _ := strconv.Atoi(r.description[m[2]:m[3]])
					statuses[typ][n] = true
				} else {
					if len(r.statuses) == 0 {
						t.Errorf("openapi.yaml: %s is named in %q, which no status lists, without its status", typ, r.description)
					}
					maps.Copy(statuses[typ], r.statuses)
					// Retry-After is required of every type named, or else
					// said of the type that carries it
					carries := problemSpecs[typ].RetryAfter > 0
					says := r.retryAfterRequired || r.retryAfter && strings.HasPrefix(r.description[m[5]:], ", with `Retry-After`")
					if carries != says {
						t.Errorf("openapi.yaml: %s is named as carrying Retry-After: %v; problemSpecs gives it %d s", typ, says, problemSpecs[typ].RetryAfter)
					}
				}
				said := ""
				for _, l := range labels {
					if l[0] < start {
						said = yesNo(l[2] < 0)
					}
				}
				if said == "" {
					t.Errorf("openapi.yaml: %s is named before any \"Retryable:\" or \"Not retryable:\" in %q", typ, r.description)
				} else if said != yesNo(problemSpecs[typ].Retryable) {
					t.Errorf("openapi.yaml: %s is named as retryable %s, problemSpecs says %s", typ, said, yesNo(problemSpecs[typ].Retryable))
				}
			}
		}
	}
	for _, typ := range types {
		got := slices.Sorted(maps.Keys(statuses[typ]))
		if want := problemSpecs[typ].Status; !slices.Equal(got, []int{want}) {
			t.Errorf("openapi.yaml names %s under the statuses %v, problemSpecs gives it %d", typ, got, want)
		}
	}
}
