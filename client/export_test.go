package client

import "github.com/loom-plugins/sandbox-cloudrun/api"

// OutcomeJSON lets the external tests write outcomes as the fuzz test does.
var OutcomeJSON = outcomeJSON

// DecodeOutcomeForTest lets the external tests read a body as Evaluate does.
var DecodeOutcomeForTest = api.DecodeOutcome
