package bulk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/loom-plugins/sandbox-cloudrun/objects"
)

// checkResults makes sure, before the shard runs, that its objects can be
// written where they go and that they will not sit beside another run's:
//
//   - a probe object, <shard>.writable, is written and deleted, so that a
//     results place the task cannot write fails the task now, not after
//     all its work (a GCS upload is lazy): a refusal, a bucket that is not
//     there, a path that is a file is an *InputError; a failure that may
//     be of a moment is not;
//   - a shard or manifest of another task count is an *InputError: beside
//     this run's shards, some inputs would have two answers. The tasks of
//     one execution all have its count, so such a shard is always another
//     run's, never a sibling's still being written;
//   - the task's own manifest, left by an earlier run, naming another
//     script or other inputs is an *InputError: a results place holds one
//     job's shards, and the task that would replace it cannot tell which
//     of the two a reader wants.
//
// An earlier attempt or run of this very job (the same count, script and
// inputs) is what a re-run resumes or replaces: checkResults returns what
// it left of the task's shard, its manifest and its results object, nil
// when it left no manifest.
func checkResults(ctx context.Context, job Job, out objects.Place) (*earlier, error) {
	if err := probe(ctx, out, job.Task.Name()+".writable"); err != nil {
		if permanent(err) {
			return nil, inputError("the results %s cannot be written: %w", out.URL(""), err)
		}
		return nil, fmt.Errorf("the results %s cannot be written (perhaps for a moment): %w", out.URL(""), err)
	}
	objs, err := out.List(ctx)
	switch {
	case err != nil && permanent(err):
		return nil, inputError("the results %s cannot be listed: %w", out.URL(""), err)
	case err != nil:
		return nil, fmt.Errorf("the results %s cannot be listed: %w", out.URL(""), err)
	}
	var foreign []string
	counts := map[int]bool{}
	var own, results *objects.Object
	for i, o := range objs {
		_, count, ok := parseShardName(o.Name)
		switch {
		case !ok:
		case count != job.Task.Count:
			foreign = append(foreign, o.Name)
			counts[count] = true
		case o.Name == job.Task.Name()+".json":
			own = &objs[i]
		case o.Name == job.Task.Name()+".ndjson":
			results = &objs[i]
		}
	}
	if len(foreign) > 0 {
		var others []string
		for _, c := range slices.Sorted(maps.Keys(counts)) {
			others = append(others, fmt.Sprintf("shard-*-of-%05d.*", c))
		}
		shown := foreign
		if len(shown) > 4 {
			shown = append(slices.Clip(shown[:4]), fmt.Sprintf("and %d more", len(foreign)-4))
		}
		return nil, inputError("the results %s hold the shards of a run of another task count (%s), and this run has %d tasks: beside them, its shards would give some inputs two answers; give this run a results prefix of its own, or delete those (%s)",
			out.URL(""), strings.Join(shown, ", "), job.Task.Count, strings.Join(others, ", "))
	}
	if own == nil {
		return nil, nil
	}
	m, err := checkOwnManifest(ctx, job, out, *own)
	if m == nil || err != nil {
		return nil, err
	}
	return &earlier{manifest: *m, results: results}, nil
}

// checkOwnManifest reads the task's manifest o, left by an earlier run,
// and refuses to replace a shard that an earlier run of another job
// wrote: its manifest names another script or other inputs. It is nil
// when o was deleted since it was listed.
func checkOwnManifest(ctx context.Context, job Job, out objects.Place, o objects.Object) (*Manifest, error) {
	r, err := out.Open(ctx, o)
	if errors.Is(err, objects.ErrChanged) || errors.Is(err, fs.ErrNotExist) {
		return nil, nil // deleted since the listing: this task's own earlier attempt, cut short
	}
	if err != nil {
		return nil, fmt.Errorf("the results %s: reading %s: %w", out.URL(""), out.URL(o.Name), err)
	}
	defer r.Close()
	var m Manifest
	b, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		return nil, fmt.Errorf("the results %s: reading %s: %w", out.URL(""), out.URL(o.Name), err)
	}
	script := job.Evaluation.ScriptRef.String()
	if m.ScriptRef != script || !sameURL(m.Inputs, job.Inputs) {
		return nil, inputError("the results %s hold shard %d of another run: its manifest %s says script %s over the inputs %s, and this run is script %s over %s; a results prefix holds one job's shards: give this run a results prefix of its own, or delete the other's",
			out.URL(""), job.Task.Index, out.URL(o.Name), m.ScriptRef, m.Inputs, script, job.Inputs)
	}
	return &m, nil
}

// sameURL reports whether two URLs name one place, however written (a
// local path cleaned).
func sameURL(a, b string) bool {
	ua, err1 := objects.Parse(a)
	ub, err2 := objects.Parse(b)
	return err1 == nil && err2 == nil && ua == ub
}

// probe writes name whole and deletes it.
func probe(ctx context.Context, out objects.Place, name string) error {
	w, err := out.Create(ctx, name)
	if err != nil {
		return err
	}
	defer w.Abort()
	if _, err := w.Write([]byte("written and deleted by a bulk task before it runs, to see that it can write here\n")); err != nil {
		return err
	}
	if err := w.Commit(ctx); err != nil {
		return err
	}
	return out.Delete(ctx, name)
}

// permanent reports whether err, from writing or listing the results, is
// an answer no retry changes: a refusal, a bucket or a path not there, a
// path that is a file, a read-only file system.
func permanent(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrNotExist) ||
		errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EROFS)
}

// shardNames are the names Task.Name gives a shard's objects.
var shardNames = regexp.MustCompile(`^shard-([0-9]{5,})-of-([0-9]{5,})\.(ndjson|json)$`)

// parseShardName is the index and task count of a shard's object directly
// in a results place.
func parseShardName(name string) (index, count int, ok bool) {
	m := shardNames.FindStringSubmatch(name)
	if m == nil {
		return 0, 0, false
	}
	index, err1 := strconv.Atoi(m[1])
	count, err2 := strconv.Atoi(m[2])
	return index, count, err1 == nil && err2 == nil
}
