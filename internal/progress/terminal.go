package progress

import (
	"io"
	"os"
)

// defaultWidth is the width of a terminal that does not say its own.
const defaultWidth = 80

// Terminal reports whether w is a terminal a bar can be drawn on, and its
// width in columns: a file that is a terminal (not a pipe, a file or a
// buffer, so that a script or a test reading the stream never sees a
// bar), whose TERM is not "dumb" (which has no erase-in-line).
func Terminal(w io.Writer) (width int, ok bool) {
	f, isFile := w.(*os.File)
	if !isFile || os.Getenv("TERM") == "dumb" {
		return 0, false
	}
	cols, ok := terminalColumns(f.Fd())
	if !ok {
		return 0, false
	}
	if cols <= 0 {
		cols = defaultWidth
	}
	return cols, true
}
