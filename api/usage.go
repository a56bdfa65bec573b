package api

import (
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// readUsage reads the usage member of an answer, when present, as
// spi.ReadUsage reads a usage object (docs/spi.md, "Usage").
func readUsage(obj *jsontext.Object) *spi.Usage {
	o, present := obj.Child("usage", false)
	if !present {
		return nil
	}
	u := spi.ReadUsage(o)
	obj.Adopt(o.Done())
	return &u
}
