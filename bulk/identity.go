package bulk

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// Identity is what the shards of one run share, which every shard's
// manifest says alike: the task count, the script, the inputs (where they
// are, their bytes and their count) and what each input was run under. A
// task run again resumes its shard only from a manifest of the same
// identity, and a check of a job's results (Check) requires the same of
// every shard.
type Identity struct {
	Shards    int    `json:"shards"`
	ScriptRef string `json:"scriptRef"`
	Inputs    string `json:"inputs"`
	// InputsSHA256 is the SHA-256 of the input objects' SHA-256s, in
	// their order: the inputs' bytes, whatever generation or inode they
	// are now at.
	InputsSHA256 string `json:"inputsSha256"`
	// TotalInputs is the number of inputs across all objects;
	// InputObjects, of the objects they were read from.
	TotalInputs  int64 `json:"totalInputs"`
	InputObjects int   `json:"inputObjects"`
	// Evaluation is what each input was run under, as the batch body's
	// members (api.AppendOptions): the limits as run (a limit above the
	// service's maximum at the maximum; one not given, the default),
	// expectedOutputShapeHash, captureLogs and determinism.
	Evaluation json.RawMessage `json:"evaluation"`
}

// evaluation is the Evaluation member of ev's runs, p being its script as
// read.
func evaluation(ev spi.Evaluation, p *effect.Prepared) json.RawMessage {
	return api.AppendOptions(nil, api.Request{
		Limits: p.Limits(), ExpectedOutputShapeHash: ev.ExpectedOutputShapeHash,
		CaptureLogs: ev.CaptureLogs, Replay: ev.Replay,
	})
}

// differs names the first member of the identity in which id and other
// differ, with id's value and other's, member "" when none: two URLs of
// one place are the same however written.
func (id Identity) differs(other Identity) (member, mine, theirs string) {
	v := func(m string, a, b any) (string, string, string) { return m, fmt.Sprint(a), fmt.Sprint(b) }
	switch {
	case id.Shards != other.Shards:
		return v("shards", id.Shards, other.Shards)
	case id.ScriptRef != other.ScriptRef:
		return v("scriptRef", id.ScriptRef, other.ScriptRef)
	case !sameURL(id.Inputs, other.Inputs):
		return v("inputs", id.Inputs, other.Inputs)
	case id.TotalInputs != other.TotalInputs:
		return v("totalInputs", id.TotalInputs, other.TotalInputs)
	case id.InputObjects != other.InputObjects:
		return v("inputObjects", id.InputObjects, other.InputObjects)
	case id.InputsSHA256 != other.InputsSHA256:
		return v("inputsSha256", id.InputsSHA256, other.InputsSHA256)
	case !sameJSON(id.Evaluation, other.Evaluation):
		return v("evaluation", string(id.Evaluation), string(other.Evaluation))
	}
	return "", "", ""
}

// sameJSON reports whether a and b are the same JSON text but for
// insignificant white space.
func sameJSON(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}
