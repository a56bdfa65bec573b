package client

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// outcomeFromBody decodes a 200 body of POST /v1/sandbox/evaluate. A body
// that is not exactly one outcome of docs/spi.md, "Outcomes" (with the logs
// and usage the service writes beside it), becomes an infrastructure
// outcome that says what is wrong with it.
func outcomeFromBody(op string, body []byte) spi.Outcome {
	a, err := api.DecodeSandboxAnswer(body)
	o := a.Outcome
	if err != nil {
		return spi.Infrastructure((&Error{Op: op, StatusCode: 200, Reason: "malformed outcome: " + err.Error()}).Error())
	}
	if o.Kind == spi.KindInfrastructure {
		o.Message = spi.BoundText(o.Message, maxMessageUnits)
	}
	return o
}

var semverRE = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// major returns a semantic version's major number.
func major(v string) (string, bool) {
	m := semverRE.FindStringSubmatch(v)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// decodeInfo reads GET /v1/capabilities as api.DecodeInfo does, and refuses
// a service whose SPI major version is not this client's.
func decodeInfo(body []byte) (Info, error) {
	info, err := api.DecodeInfo(body)
	if err != nil {
		return Info{}, fmt.Errorf("%w: %w", ErrInvalidCapabilities, err)
	}
	got, ok := major(info.SPIVersion)
	if !ok {
		return Info{}, fmt.Errorf("%w: spiVersion %s is not a semantic version", ErrInvalidCapabilities, strconv.Quote(spi.BoundText(info.SPIVersion, 64)))
	}
	want, _ := major(spi.SPIVersion)
	if got != want {
		return Info{}, fmt.Errorf("%w: the service implements %s, this client %s", ErrIncompatibleSPI, info.SPIVersion, spi.SPIVersion)
	}
	return info, nil
}
