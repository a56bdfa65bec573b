package conformance

import "github.com/loom-plugins/sandbox-cloudrun/spi"

// GoodFake is a backend that keeps every contract, for the external tests.
func GoodFake() spi.Backend { return goodFake(bestCaps) }

// FastOptions are the kit's options for fakes that answer at once.
var FastOptions = fastOptions
