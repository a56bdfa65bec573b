package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/service"
)

// What every verb shares: its flags and their usage, and how it fails.

// verbFlags are a verb's flags and the first line of its usage.
type verbFlags struct {
	*flag.FlagSet
	synopsis string // "usage: sandbox-cloudrun eval [flags] SCRIPT", and what the verb does
}

func newFlagSet(name, synopsis string) *verbFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse reports its errors itself
	fs.Usage = func() {}
	return &verbFlags{FlagSet: fs, synopsis: synopsis}
}

// usage writes the verb's synopsis and its flags to w.
func (fs *verbFlags) usage(w io.Writer) {
	fmt.Fprintln(w, fs.synopsis)
	if !fs.hasFlags() {
		return
	}
	fmt.Fprintln(w, "\nflags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// shortUsage writes the synopsis's first line and where the rest is, for a
// usage error, whose own line follows. It names the flags only for a verb
// that has some.
func (fs *verbFlags) shortUsage(w io.Writer) {
	first, _, _ := strings.Cut(fs.synopsis, "\n")
	what := "the usage and the exit statuses"
	if fs.hasFlags() {
		what = "the flags and the exit statuses"
	}
	fmt.Fprintf(w, "%s\n(sandbox-cloudrun %s -h prints %s)\n", first, fs.Name(), what)
}

// hasFlags reports whether the verb defines any flag.
func (fs *verbFlags) hasFlags() bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parse reads args, whose flags may come before, between or after the
// positional arguments ("--" ends the flags), and returns the positional
// arguments. -h, -help or --help prints the usage to stdout and returns
// errHelp, for the verb to return as it is: run ends with status 0. Any
// other mistake prints the usage to stderr and is a usage error (status 2).
func (fs *verbFlags) parse(args []string, stdout, stderr io.Writer) ([]string, error) {
	var positional []string
	for {
		err := fs.Parse(args)
		switch {
		case errors.Is(err, flag.ErrHelp):
			fs.usage(stdout)
			return nil, errHelp
		case err != nil:
			fs.shortUsage(stderr)
			return nil, exitError{2, fmt.Errorf("%s: %w", fs.Name(), err)}
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional, args = append(positional, rest[0]), rest[1:]
	}
}

// durationFlag is a flag that reads a duration as the configuration reads
// one (service.ParseDuration), so that a value without its unit says so.
type durationFlag struct {
	d   *time.Duration
	def time.Duration
}

// duration defines a duration flag, with def as its default and example.
func (fs *verbFlags) duration(name string, def time.Duration, usage string) *time.Duration {
	d := def
	fs.Var(durationFlag{&d, def}, name, usage)
	return &d
}

// optionalDuration defines a duration flag with no default: zero until it
// is set, with example as the example its error gives.
func (fs *verbFlags) optionalDuration(name string, example time.Duration, usage string) *time.Duration {
	var d time.Duration
	fs.Var(durationFlag{&d, example}, name, usage)
	return &d
}

// String is the flag's value; a zero one is no value, which the usage
// does not print as a default.
func (f durationFlag) String() string {
	if f.d == nil || *f.d == 0 {
		return ""
	}
	return f.d.String()
}

func (f durationFlag) Set(value string) error {
	d, err := service.ParseDuration(value, f.def)
	if err != nil {
		return fmt.Errorf("must be %w", err)
	}
	*f.d = d
	return nil
}

// errHelp ends a verb whose usage was asked for and printed: not a failure.
var errHelp = errors.New("help printed")

// usageError prints the verb's synopsis to stderr and returns the error as
// a usage error (status 2).
func (fs *verbFlags) usageError(stderr io.Writer, format string, args ...any) error {
	fs.shortUsage(stderr)
	return exitError{2, fmt.Errorf(format, args...)}
}

// errSilent ends the process with a failure that has already been reported.
var errSilent = errors.New("failed")

type exitCoder interface{ ExitCode() int }

type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }
func (e exitError) ExitCode() int { return e.code }
