package deploy

import (
	"fmt"
	"slices"
	"strings"
)

// A finding is one failed check, with a stable id that the weakened-copy tests
// of the Dockerfile and cloudbuild.yaml expect.
type finding struct {
	id    string
	where string
	msg   string
}

func (f finding) String() string { return fmt.Sprintf("[%s] %s: %s", f.id, f.where, f.msg) }

type findings []finding

func (fs *findings) add(id, where, format string, args ...any) {
	*fs = append(*fs, finding{id: id, where: where, msg: fmt.Sprintf(format, args...)})
}

func (fs findings) has(id string) bool {
	return slices.ContainsFunc(fs, func(f finding) bool { return f.id == id })
}

func (fs findings) String() string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("\n  " + f.String())
	}
	return b.String()
}
