package bulk

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/objects"
)

// earlier is what an earlier attempt left of the task's shard, as the
// results place listed it: its manifest, and its results object when it
// was listed.
type earlier struct {
	manifest Manifest
	results  *objects.Object
}

// resumed is an earlier attempt's shard that a task resumes: each of its
// lines that has an answer, kept as it was written, and the counts of
// those.
type resumed struct {
	from Manifest
	// keep is each input's line, by its index in the shard, nil for an
	// input to run again.
	keep [][]byte
	// kept counts the lines kept, as a batch summary counts its lines.
	kept api.BatchSummary
}

// toRun are the shard's indices of the inputs to run again, in order.
func (r *resumed) toRun() []int {
	var run []int
	for i, l := range r.keep {
		if l == nil {
			run = append(run, i)
		}
	}
	return run
}

// resume decides whether the task resumes its shard from the attempt e
// left, m being this attempt's manifest so far (its identity and range):
// it does when e's manifest is of the same run (its Identity, shard and
// range are m's) and its results object is the one the manifest describes
// (listed, read at that generation, of its length and SHA-256), with one
// line per index of the range in order. The lines kept are the answers (a
// value or a typed failure): an input whose line is notRun or a problem
// (the service failed to answer it, which is why the attempt exited 1) is
// run again. Otherwise the shard is run whole, and why says why; a
// results object that cannot be read for a moment (a 5xx) is an error, so
// that the task's retry resumes it rather than running it whole.
func resume(ctx context.Context, out objects.Place, e *earlier, m Manifest) (r *resumed, why string, err error) {
	was := e.manifest
	member, theirs, ours := was.differs(m.Identity)
	switch {
	case member != "":
		return nil, fmt.Sprintf("its manifest is of another run: it says %s %s, and this run's is %s", member, theirs, ours), nil
	case was.Shard != m.Shard || was.Start != m.Start || was.End != m.End:
		return nil, fmt.Sprintf("its manifest is of shard %d [%d, %d), not %d [%d, %d)", was.Shard, was.Start, was.End, m.Shard, m.Start, m.End), nil
	case e.results == nil:
		return nil, "its results object is not there", nil
	case e.results.Size != was.ResultsBytes:
		return nil, fmt.Sprintf("its results object is %d bytes, and its manifest says %d", e.results.Size, was.ResultsBytes), nil
	}
	rc, err := out.Open(ctx, *e.results)
	switch {
	case errors.Is(err, objects.ErrChanged) || errors.Is(err, fs.ErrNotExist):
		return nil, "its results object was replaced or deleted since it was listed", nil
	case err != nil:
		return nil, "", fmt.Errorf("reading the earlier attempt's results %s: %w", out.URL(e.results.Name), err)
	}
	defer rc.Close()
	digest := sha256.New()
	br := bufio.NewReaderSize(io.TeeReader(rc, digest), 64<<10)
	r = &resumed{from: was, keep: make([][]byte, 0, m.End-m.Start), kept: api.BatchSummary{Outcomes: map[string]int{}}}
	for idx := m.Start; ; idx++ {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) && len(line) == 0 {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			if errors.Is(err, objects.ErrChanged) {
				return nil, "its results object was replaced while it was read", nil
			}
			return nil, "", fmt.Errorf("reading the earlier attempt's results %s: %w", out.URL(e.results.Name), err)
		}
		if idx >= m.End || !bytes.HasSuffix(line, []byte("\n")) {
			return nil, fmt.Sprintf("its results object does not hold one line per input of [%d, %d)", m.Start, m.End), nil
		}
		l, derr := api.DecodeBatchLine(line[:len(line)-1])
		switch {
		case derr != nil:
			return nil, fmt.Sprintf("its line for input %d is not a batch line: %v", idx, derr), nil
		case l.Summary != nil || int64(l.Index) != idx:
			return nil, fmt.Sprintf("its line for input %d is not that input's", idx), nil
		case l.Answer != nil:
			r.keep = append(r.keep, line)
			r.kept.Add(l)
		default: // notRun, or a problem
			r.keep = append(r.keep, nil)
		}
	}
	if got := int64(len(r.keep)); got != m.End-m.Start {
		return nil, fmt.Sprintf("its results object holds %d lines, not one per input of [%d, %d)", got, m.Start, m.End), nil
	}
	if sum := hex.EncodeToString(digest.Sum(nil)); sum != was.ResultsSHA256 {
		return nil, fmt.Sprintf("its results object's SHA-256 is %s, and its manifest says %s", sum, was.ResultsSHA256), nil
	}
	return r, "", nil
}

// merger writes a resumed shard's lines in index order: each input's new
// line as it comes, after the kept lines of the inputs before it.
type merger struct {
	keep [][]byte
	next int // the shard's index of the next line to write
	w    io.Writer
}

// line writes the kept lines before i and then i's new line.
func (m *merger) line(i int, line []byte) error {
	if err := m.keptUpTo(i); err != nil {
		return err
	}
	if m.keep[i] != nil {
		return fmt.Errorf("bulk: input %d of the shard was answered twice", i)
	}
	m.next = i + 1
	_, err := m.w.Write(line)
	return err
}

// keptUpTo writes the kept lines of indices before i not yet written:
// every one of them is kept, the others having come before.
func (m *merger) keptUpTo(i int) error {
	for ; m.next < i; m.next++ {
		l := m.keep[m.next]
		if l == nil {
			return fmt.Errorf("bulk: input %d of the shard has no line", m.next)
		}
		if _, err := m.w.Write(l); err != nil {
			return err
		}
	}
	return nil
}

// addSummary adds the counts of o to s, as if s had counted o's lines.
func addSummary(s *api.BatchSummary, o api.BatchSummary) {
	if s.Outcomes == nil {
		s.Outcomes = map[string]int{}
	}
	s.Items += o.Items
	for k, n := range o.Outcomes {
		s.Outcomes[k] += n
	}
	s.Problems += o.Problems
	s.NotRun += o.NotRun
	s.AddUsage(o.Usage)
}
