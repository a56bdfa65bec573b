package contentstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
)

// PutFiles is the "put FILE..." verb: it stores each file in s and prints
// one "REF  FILE" line (two spaces) per stored file to stdout. The name "-"
// reads stdin, at most once.
//
// A file is read through the store's size limit, so an oversized file is
// refused without being read whole. A file that fails prints nothing; the
// others are still stored, and the returned error names every failure.
func PutFiles(ctx context.Context, s Store, args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("put: no files given (use - for standard input)")
	}
	stdinSeen := false
	for _, a := range args {
		if a == "-" {
			if stdinSeen {
				return errors.New("put: - (standard input) given more than once")
			}
			stdinSeen = true
		}
	}
	max := DefaultMaxScriptBytes
	if m, ok := s.(maxSizer); ok {
		max = m.MaxScriptBytes()
	}
	var errs []error
	for _, name := range args {
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("put: %w", err))
			break
		}
		ref, err := putOne(ctx, s, name, stdin, max)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		// One write per line, so that a line is never half printed.
		if _, err := io.WriteString(stdout, ref.String()+"  "+name+"\n"); err != nil {
			errs = append(errs, fmt.Errorf("put: writing the reference of %s: %w", name, err))
			break
		}
	}
	return errors.Join(errs...)
}

// putOne reads one file (or stdin for "-") within max bytes and stores it.
func putOne(ctx context.Context, s Store, name string, stdin io.Reader, max int64) (contentref.Ref, error) {
	var r io.Reader
	if name == "-" {
		if stdin == nil {
			return contentref.Ref{}, errors.New("put -: no standard input")
		}
		r = stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			return contentref.Ref{}, fmt.Errorf("put: %w", err)
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return contentref.Ref{}, fmt.Errorf("put: %w", err)
		}
		if fi.IsDir() {
			return contentref.Ref{}, fmt.Errorf("put %s: is a directory", name)
		}
		if fi.Mode().IsRegular() && fi.Size() > max {
			return contentref.Ref{}, fmt.Errorf("put %s: %w: %d bytes, over the limit of %d bytes", name, contentref.ErrTooLarge, fi.Size(), max)
		}
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return contentref.Ref{}, fmt.Errorf("put %s: reading: %w", name, err)
	}
	if int64(len(data)) > max {
		return contentref.Ref{}, fmt.Errorf("put %s: %w: over the limit of %d bytes", name, contentref.ErrTooLarge, max)
	}
	ref, err := s.Put(ctx, data)
	if err != nil {
		return contentref.Ref{}, fmt.Errorf("put %s: %w", name, err)
	}
	return ref, nil
}
