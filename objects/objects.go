// Package objects reads and writes named objects in a place, a prefix of a
// GCS bucket or a local directory, under one contract: list in name order,
// open at a generation, write whole. The script store (contentstore) and
// the bulk verb (bulk) read and write through it.
//
// [Dir], a local directory, is here; the GCS prefix is package gcsobjects,
// kept apart so that this package, and the script store that uses it,
// link no GCS client and no gRPC. [Parse] is the one parser of their URLs.
package objects

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
)

// Object is one object of a place, as Stat or List found it.
type Object struct {
	// Name is slash-separated, relative to the place: "" is the object the
	// place's URL names itself (gs://b/in.ndjson, or a file's path).
	Name string
	// Generation pins the bytes found: the GCS object's generation, or for
	// a file a digest of its inode and modification time. Open refuses an
	// object whose generation is no longer this one; 0 opens whatever is
	// there.
	Generation int64
	// Size is its length in bytes.
	Size int64
}

// ErrChanged is Open's error for an object whose generation is no longer
// the one asked for: it was replaced or deleted since it was listed.
var ErrChanged = errors.New("the object changed since it was listed")

// Place is a prefix of a GCS bucket or a local directory. Its errors name
// the URL concerned and wrap, for errors.Is, fs.ErrNotExist for an object
// (or a bucket, or a directory) that is not there and fs.ErrPermission
// for a refusal; anything else may be of a moment.
//
// A place is safe for concurrent use; a Writer is not.
type Place interface {
	// URL is name's URL, for messages and manifests: gs://bucket/path or
	// a local path.
	URL(name string) string
	// Stat finds the object name, with its generation and size: an error
	// wrapping fs.ErrNotExist when there is none (a directory is none).
	Stat(ctx context.Context, name string) (Object, error)
	// List lists every object under the place (under the prefix, or the
	// directory's files recursively), in the order of their names' bytes,
	// as GCS lists a prefix (a.ndjson before a/b.ndjson), each with its
	// generation. A directory that is not there, or a bucket, is an error
	// wrapping fs.ErrNotExist; a prefix with nothing under it lists none.
	List(ctx context.Context) ([]Object, error)
	// Open reads o at o.Generation: ErrChanged when it is no longer that
	// generation (a read that finds it changed fails with ErrChanged too,
	// never returning bytes of two generations).
	Open(ctx context.Context, o Object) (io.ReadCloser, error)
	// Create begins writing name whole: nothing is seen under name until
	// Commit, and Abort, or a process that dies first, leaves what was
	// there before.
	Create(ctx context.Context, name string) (Writer, error)
	// Delete deletes name; one that is not there is no error.
	Delete(ctx context.Context, name string) error
	// Close releases what the place holds.
	Close() error
}

// Writer is an object being written: Write buffers it, Commit makes it
// seen whole under its name, replacing what was there, and Abort discards
// it. After either, neither does anything; an Abort after a Commit leaves
// the object, so that a deferred Abort is the way out of every error path.
type Writer interface {
	io.Writer
	// Commit ends the write; ctx bounds how long it may take.
	Commit(ctx context.Context) error
	Abort()
}

// SortByName orders objects as List returns them: by their names' bytes,
// as the GCS service lists a prefix.
func SortByName(objs []Object) {
	slices.SortFunc(objs, func(a, b Object) int { return strings.Compare(a.Name, b.Name) })
}
