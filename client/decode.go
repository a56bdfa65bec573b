package client

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// answerFromBody decodes a 200 body of POST /v1/sandbox/evaluate: exactly
// one outcome of docs/spi.md, "Outcomes", with the logs and usage the
// service writes beside it. A body that is not one is an *Error that says
// what is wrong with it, which the caller reports as infrastructure.
func answerFromBody(op string, body []byte) (api.SandboxAnswer, error) {
	a, err := api.DecodeSandboxAnswer(body)
	if err != nil {
		return api.SandboxAnswer{}, &Error{Op: op, StatusCode: 200, Reason: "malformed outcome: " + err.Error()}
	}
	if a.Outcome.Kind == spi.KindInfrastructure {
		a.Outcome.Message = spi.BoundText(a.Outcome.Message, maxMessageUnits)
	}
	return a, nil
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
