package bulk

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/objects"
	"github.com/loom-plugins/sandbox-cloudrun/objects/gcsobjects"
)

// checkAttempts is how many times Check makes a request that fails for
// a moment (a 5xx) before it gives up: with the client's backoff, some
// seconds.
const checkAttempts = 4

// Checked is a job's results that Check found whole and of one run: the
// run's identity, and the counts of all its shards' lines together.
type Checked struct {
	Identity
	api.BatchSummary
}

// Complete reports whether every input of the job has its answer.
func (c Checked) Complete() bool { return c.Problems == 0 && c.NotRun == 0 }

// NotWhole is a results place that does not hold one whole run's
// shards, each finding naming a shard and what is wrong with it. Printed
// says whether some lines had been written before it was found (a
// results object whose bytes are not its manifest's is found as it is
// read): those are not to be trusted.
type NotWhole struct {
	URL      string
	Findings []string
	Printed  bool
}

func (e *NotWhole) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the results %s are not one whole run's:", e.URL)
	for _, f := range e.Findings {
		b.WriteString("\n  ")
		b.WriteString(f)
	}
	if e.Printed {
		b.WriteString("\nthe lines written before this was found are not the job's results")
	}
	return b.String()
}

// Check checks that the results place at URL holds one whole run's
// shards, and writes their lines to w, in index order: every manifest
// shard-KKKKK-of-NNNNN.json for K in [0, N) is there, each beside its
// results object; no shard's object is of another task count; every
// manifest names its own shard and N tasks, and the same run (its
// Identity, Identity.differs) as the first shard's; their ranges, in shard order,
// cover [0, totalInputs) once, with no gap and no overlap, each with one
// line per input; and each results object is its manifest's length.
// Anything else is a *NotWhole naming each finding, with nothing written.
// Then the results objects are written to w in shard order, each read at
// the generation listed and checked as it is read: each line is the
// next index's, and the object's SHA-256 is its manifest's (a *NotWhole,
// Printed, when not).
//
// Other errors are the place's: one that cannot be listed or read for a
// moment, or an object replaced since it was listed (a task still
// writing), which a check run again may not meet.
func Check(ctx context.Context, url string, w io.Writer) (Checked, error) {
	u, err := objects.Parse(url)
	if err != nil {
		return Checked{}, inputError("the results: %w", err)
	}
	// a person waits for the check: a bucket that fails for longer than
	// a few tries is an answer, not a wait until the context ends
	places := gcsobjects.Opener{Attempts: checkAttempts}
	defer places.Close()
	out, err := places.Open(ctx, u)
	if err != nil {
		return Checked{}, fmt.Errorf("the results: %w", err)
	}
	objs, err := out.List(ctx)
	switch {
	case err != nil && permanent(err):
		return Checked{}, &NotWhole{URL: out.URL(""), Findings: []string{fmt.Sprintf("they cannot be listed: %v", err)}}
	case err != nil:
		return Checked{}, fmt.Errorf("the results %s cannot be listed: %w", out.URL(""), err)
	}
	shards, err := readShards(ctx, out, objs)
	if err != nil {
		return Checked{}, err
	}
	c := Checked{BatchSummary: api.BatchSummary{Outcomes: map[string]int{}}}
	ref := slices.IndexFunc(shards, func(s *shard) bool { return s.manifest != nil })
	if ref >= 0 {
		c.Identity = shards[ref].manifest.Identity
	}
	if findings := checkShards(shards, ref); len(findings) > 0 {
		return Checked{}, &NotWhole{URL: out.URL(""), Findings: findings}
	}
	for _, s := range shards {
		addSummary(&c.BatchSummary, s.manifest.BatchSummary)
	}
	printed := false
	for k, s := range shards {
		finding, err := copyShard(ctx, out, s, w, &printed)
		if err != nil {
			return Checked{}, fmt.Errorf("reading shard %d's results %s: %w", k, out.URL(s.results.Name), err)
		}
		if finding != "" {
			return Checked{}, &NotWhole{URL: out.URL(""), Findings: []string{fmt.Sprintf("shard %d: %s", k, finding)}, Printed: printed}
		}
	}
	return c, nil
}

// shard is a shard's objects, as listed, and its manifest as read.
type shard struct {
	name        string // shard-KKKKK-of-NNNNN
	manifestObj *objects.Object
	results     *objects.Object
	manifest    *Manifest
	unreadable  string
}

// readShards finds the shards' objects among objs and reads their
// manifests. They are one task count's shards, 0 to N-1, whatever is
// there: a place with none, or with the shards of several counts, is a
// *NotWhole.
func readShards(ctx context.Context, out objects.Place, objs []objects.Object) ([]*shard, error) {
	byCount := map[int]map[int]*shard{}
	strays := []string{}
	for i, o := range objs {
		index, count, ok := parseShardName(o.Name)
		if !ok {
			continue
		}
		if index >= count {
			strays = append(strays, o.Name)
			continue
		}
		if byCount[count] == nil {
			byCount[count] = map[int]*shard{}
		}
		s := byCount[count][index]
		if s == nil {
			s = &shard{name: Task{Index: index, Count: count}.Name()}
			byCount[count][index] = s
		}
		if strings.HasSuffix(o.Name, ".json") {
			s.manifestObj = &objs[i]
		} else {
			s.results = &objs[i]
		}
	}
	counts := slices.Sorted(maps.Keys(byCount))
	switch {
	case len(counts) == 0:
		return nil, &NotWhole{URL: out.URL(""), Findings: []string{"no shard-KKKKK-of-NNNNN.json or .ndjson is there: nothing was written, or this is not a job's results place"}}
	case len(counts) > 1:
		var runs []string
		for _, c := range counts {
			runs = append(runs, fmt.Sprintf("%d shards of %d tasks (shard-*-of-%05d.*)", len(byCount[c]), c, c))
		}
		return nil, &NotWhole{URL: out.URL(""), Findings: []string{"they hold the shards of runs of several task counts: " + strings.Join(runs, ", ") + "; beside each other they give inputs two answers: keep one run's"}}
	case len(strays) > 0:
		return nil, &NotWhole{URL: out.URL(""), Findings: []string{"objects named as shards of no task of their count: " + strings.Join(strays, ", ")}}
	}
	n := counts[0]
	shards := make([]*shard, n)
	for k := range n {
		s := byCount[n][k]
		if s == nil {
			s = &shard{name: Task{Index: k, Count: n}.Name()}
		}
		shards[k] = s
		if s.manifestObj == nil {
			continue
		}
		m, err := readManifest(ctx, out, *s.manifestObj)
		if err != nil {
			return nil, err
		}
		if m == nil {
			s.unreadable = "its manifest is not JSON of a manifest"
			continue
		}
		s.manifest = m
	}
	return shards, nil
}

// readManifest reads and decodes the manifest o: nil when it is not a
// manifest's JSON.
func readManifest(ctx context.Context, out objects.Place, o objects.Object) (*Manifest, error) {
	r, err := out.Open(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", out.URL(o.Name), err)
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", out.URL(o.Name), err)
	}
	var m Manifest
	if json.Unmarshal(b, &m) != nil {
		return nil, nil
	}
	return &m, nil
}

// checkShards lists what is wrong with shards, the job's in order, each
// manifest's run being compared with shard ref's, the first with a
// manifest (-1 for none).
func checkShards(shards []*shard, ref int) []string {
	var findings []string
	var id Identity
	if ref >= 0 {
		id = shards[ref].manifest.Identity
	}
	bad := func(k int, format string, args ...any) {
		findings = append(findings, fmt.Sprintf("shard %d (%s): %s", k, shards[k].name, fmt.Sprintf(format, args...)))
	}
	var next int64 // the first index not yet covered
	for k, s := range shards {
		m := s.manifest
		switch {
		case s.unreadable != "":
			bad(k, "%s", s.unreadable)
			continue
		case m == nil:
			bad(k, "no manifest: its task has not written its shard (not yet ended, or failed before; executing the job again resumes it)")
			continue
		}
		if member, mine, theirs := m.differs(id); member != "" {
			bad(k, "its manifest is of another run than shard %d's: it says %s %s, and shard %d's %s", ref, member, mine, ref, theirs)
		}
		if m.Shard != k || m.Shards != len(shards) {
			bad(k, "its manifest names shard %d of %d", m.Shard, m.Shards)
		}
		switch {
		case m.Start > next:
			bad(k, "it begins at input %d where the shards before end at %d: inputs [%d, %d) have no line", m.Start, next, next, m.Start)
		case m.Start < next:
			bad(k, "it begins at input %d where the shards before end at %d: inputs [%d, %d) have two lines", m.Start, next, m.Start, next)
		}
		if m.End < m.Start || int64(m.Items) != m.End-m.Start {
			bad(k, "its manifest counts %d lines for inputs [%d, %d)", m.Items, m.Start, m.End)
		}
		next = max(next, m.End)
		switch {
		case s.results == nil:
			bad(k, "its results object %s.ndjson is not there", s.name)
		case s.results.Size != m.ResultsBytes:
			bad(k, "its results object is %d bytes, and its manifest says %d", s.results.Size, m.ResultsBytes)
		}
	}
	if ref >= 0 && next != id.TotalInputs && len(findings) == 0 {
		findings = append(findings, fmt.Sprintf("the shards end at input %d, and the run has %d inputs: inputs [%d, %d) have no line", next, id.TotalInputs, next, id.TotalInputs))
	}
	return findings
}

// copyShard writes s's results object to w, read at the generation
// listed, each line checked to be the next index's and the whole to be
// of the manifest's SHA-256: a finding when not, printed set once a byte
// is written.
func copyShard(ctx context.Context, out objects.Place, s *shard, w io.Writer, printed *bool) (finding string, err error) {
	r, err := out.Open(ctx, *s.results)
	if err != nil {
		return "", err
	}
	defer r.Close()
	m := s.manifest
	digest := sha256.New()
	br := bufio.NewReaderSize(io.TeeReader(r, digest), 64<<10)
	next := m.Start
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if !bytes.HasSuffix(line, []byte("\n")) {
				return "its results object's last line has no newline", nil
			}
			if i, ok := lineIndex(line); !ok || i != next || next >= m.End {
				return fmt.Sprintf("its results object's line %d is not input %d's", next-m.Start+1, next), nil
			}
			if _, err := w.Write(line); err != nil {
				return "", err
			}
			*printed = true
			next++
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", err
		}
	}
	if next != m.End {
		return fmt.Sprintf("its results object holds %d lines, and its manifest counts %d", next-m.Start, m.End-m.Start), nil
	}
	if sum := hex.EncodeToString(digest.Sum(nil)); sum != m.ResultsSHA256 {
		return fmt.Sprintf("its results object's SHA-256 is %s, and its manifest says %s: it is not the object the manifest describes", sum, m.ResultsSHA256), nil
	}
	return "", nil
}

// lineIndex is the index a shard's line begins with, as AppendBatchLine
// writes it: {"index":N,…
func lineIndex(line []byte) (int64, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(`{"index":`))
	if !ok {
		return 0, false
	}
	end := bytes.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if end <= 0 || rest[end] != ',' {
		return 0, false
	}
	i, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	return i, err == nil
}
