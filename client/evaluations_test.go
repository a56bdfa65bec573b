package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/client"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

const ref = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func evaluations(t *testing.T, body string, status int, req client.EvaluationRequest) (client.EvaluationResponse, error, *fake) {
	t.Helper()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/evaluations" {
			http.NotFound(w, r)
			return
		}
		if status == http.StatusOK {
			writeJSON(w, status, body)
			return
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := dial(t, f.URL).Evaluations(ctx, req)
	return resp, err, f
}

func TestEvaluationsEveryAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       api.EvaluationResponse
	}{
		{"ok", `{"ok":true,"value":{"items":[1,2]}}`, api.EvaluationResponse{OK: true, Value: json.RawMessage(`{"items":[1,2]}`)}},
		{"ok with logs", `{"ok":true,"value":null,"logs":"hello\n"}`, api.EvaluationResponse{OK: true, Value: json.RawMessage(`null`), Logs: ptr("hello\n")}},
		{"limitExceeded", `{"ok":false,"failure":{"channel":"limitExceeded","kind":"output"}}`,
			api.EvaluationResponse{Failure: &spi.Failure{Channel: spi.ChannelLimitExceeded, Kind: spi.LimitOutput}}},
		{"scriptError", `{"ok":false,"failure":{"channel":"scriptError","name":"RangeError","message":"bad"},"logs":""}`,
			api.EvaluationResponse{Failure: &spi.Failure{Channel: spi.ChannelScriptError, Name: ptr("RangeError"), Message: "bad"}, Logs: ptr("")}},
		{"scriptError without name", `{"ok":false,"failure":{"channel":"scriptError","message":"x"}}`,
			api.EvaluationResponse{Failure: &spi.Failure{Channel: spi.ChannelScriptError, Message: "x"}}},
		{"shapeMismatch", `{"ok":false,"failure":{"channel":"shapeMismatch","expected":"sha256:aa","observed":"sha256:bb"}}`,
			api.EvaluationResponse{Failure: &spi.Failure{Channel: spi.ChannelShapeMismatch, Expected: "sha256:aa", Observed: "sha256:bb"}}},
		{"scriptMissing", `{"ok":false,"failure":{"channel":"scriptMissing","scriptRef":"` + ref + `"}}`,
			api.EvaluationResponse{Failure: &spi.Failure{Channel: spi.ChannelScriptMissing, ScriptRef: ref}}},
		{"inputTooLarge", `{"ok":false,"failure":{"channel":"inputTooLarge","limitBytes":1048576}}`,
			api.EvaluationResponse{Failure: &spi.Failure{Channel: spi.ChannelInputTooLarge, LimitBytes: 1 << 20}}},
		{"inputNotSerializable", `{"ok":false,"failure":{"channel":"inputNotSerializable","message":"duplicate key"}}`,
			api.EvaluationResponse{Failure: &spi.Failure{Channel: spi.ChannelInputNotSerializable, Message: "duplicate key"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err, _ := evaluations(t, tc.body, 200, client.EvaluationRequest{ScriptRef: ref})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.EvaluationResponse, tc.want) {
				t.Errorf("got %+v (failure %+v), want %+v (failure %+v)", got, got.Failure, tc.want, tc.want.Failure)
			}
		})
	}
}

func TestEvaluationsSendsTheContract(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  client.EvaluationRequest
		want string
	}{
		{"minimal", client.EvaluationRequest{ScriptRef: ref}, `{"scriptRef":"` + ref + `","input":null}`},
		{"everything", client.EvaluationRequest{ScriptRef: ref, Input: json.RawMessage(`{ "a" : [1] }`),
			Limits:                  &spi.Limits{WallClock: 250 * time.Millisecond, MemoryBytes: 1 << 20},
			ExpectedOutputShapeHash: "sha256:ff", CaptureLogs: true},
			`{"scriptRef":"` + ref + `","input":{"a":[1]},"limits":{"wallClockMs":250,"memoryBytes":1048576},"expectedOutputShapeHash":"sha256:ff","captureLogs":true}`},
		{"one limit", client.EvaluationRequest{ScriptRef: ref, Limits: &spi.Limits{MemoryBytes: 1 << 20}},
			`{"scriptRef":"` + ref + `","input":null,"limits":{"memoryBytes":1048576}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err, f := evaluations(t, `{"ok":true,"value":1}`, 200, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			reqs := f.requests()
			if len(reqs) != 1 || reqs[0].Method != http.MethodPost || reqs[0].Header.Get("Content-Type") != "application/json" {
				t.Fatalf("requests %+v", reqs)
			}
			if got := strings.TrimSpace(string(reqs[0].Body)); got != tc.want {
				t.Errorf("sent %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestEvaluationsRefusesInvalidRequestsLocally(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `{"ok":true,"value":1}`) })
	c := dial(t, f.URL)
	for name, tc := range map[string]struct {
		req      client.EvaluationRequest
		sentinel error
		says     string
	}{
		"no ref":                 {client.EvaluationRequest{}, client.ErrInvalidRequest, "ScriptRef is empty"},
		"input not JSON":         {client.EvaluationRequest{ScriptRef: ref, Input: json.RawMessage(`{a:1}`)}, client.ErrInvalidRequest, "Input is not JSON text"},
		"input a key twice":      {client.EvaluationRequest{ScriptRef: ref, Input: json.RawMessage(`{"a":1,"a":2}`)}, client.ErrInvalidRequest, "Input is not JSON text"},
		"input empty":            {client.EvaluationRequest{ScriptRef: ref, Input: json.RawMessage{}}, client.ErrInvalidRequest, "Input is not JSON text"},
		"negative limit":         {client.EvaluationRequest{ScriptRef: ref, Limits: &spi.Limits{WallClock: -time.Second}}, client.ErrInvalidLimits, "must not be negative"},
		"input and no ref":       {client.EvaluationRequest{Input: json.RawMessage(`[`)}, client.ErrInvalidRequest, "ScriptRef is empty"},
		"no ref, negative limit": {client.EvaluationRequest{Limits: &spi.Limits{MemoryBytes: -1}}, client.ErrInvalidRequest, "ScriptRef is empty"},
	} {
		_, err := c.Evaluations(context.Background(), tc.req)
		if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: returned %v, want an error wrapping %v that says %q", name, err, tc.sentinel, tc.says)
		}
		var ce *client.Error
		if errors.As(err, &ce) {
			t.Errorf("%s: a refusal of the caller's own request is no *client.Error, the service's: %v", name, err)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

func TestEvaluationsUntypedFailuresAreErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		status    int
		body      string
		retryable bool
		fragments []string
	}{
		{"integrity mismatch", 500, `{"type":"https://x/problems/integrity","title":"Script integrity mismatch","status":500,"detail":"bytes do not match ` + ref + `","retryable":false}`,
			false, []string{"HTTP 500", "Script integrity mismatch", "bytes do not match"}},
		{"did not settle", 503, `{"type":"t","title":"Backend did not settle","status":503,"detail":"within 62s","retryable":true}`,
			true, []string{"HTTP 503", "within 62s"}},
		{"504 without retryable", 504, `{"type":"t","title":"Timeout","status":504,"detail":"request timeout"}`,
			true, []string{"HTTP 504"}},
		{"500 without retryable", 500, `{"type":"t","title":"Internal","status":500,"detail":"boom"}`,
			false, []string{"HTTP 500", "boom"}},
		{"400", 400, `{"type":"t","title":"Bad request","status":400,"detail":"unknown field \"x\"","retryable":false}`,
			false, []string{"HTTP 400", `unknown field "x"`}},
		{"not a problem", 500, `oops`, false, []string{"HTTP 500"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err, _ := evaluations(t, tc.body, tc.status, client.EvaluationRequest{ScriptRef: ref})
			var e *client.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v, want a *client.Error", err)
			}
			if e.StatusCode != tc.status || e.Retryable() != tc.retryable {
				t.Errorf("status %d retryable %v, want %d %v", e.StatusCode, e.Retryable(), tc.status, tc.retryable)
			}
			if tc.body != "oops" && (e.Problem == nil || e.Problem.Status != tc.status) {
				t.Errorf("problem %+v", e.Problem)
			}
			for _, f := range tc.fragments {
				if !strings.Contains(err.Error(), f) {
					t.Errorf("error %q lacks %q", err, f)
				}
			}
		})
	}
}

func TestEvaluationsMalformedAnswersAreErrors(t *testing.T) {
	for _, tc := range []struct{ name, body, fragment string }{
		{"no ok", `{"value":1}`, `"ok": missing`},
		{"ok without value", `{"ok":true}`, `"value": missing`},
		{"ok with failure", `{"ok":true,"value":1,"failure":{"channel":"scriptError","message":"m"}}`, `"failure": not a member of this kind of outcome`},
		{"failed without failure", `{"ok":false}`, `"failure": missing`},
		{"failed with value", `{"ok":false,"value":1,"failure":{"channel":"inputTooLarge","limitBytes":1}}`, `"value": not a member of this kind of outcome`},
		{"failure payload nested", `{"ok":false,"failure":{"channel":"limitExceeded","payload":{"kind":"cpu"}}}`, `"failure"."kind": missing`},
		{"unknown channel", `{"ok":false,"failure":{"channel":"timeout"}}`, "must be one of limitExceeded"},
		{"limit kind", `{"ok":false,"failure":{"channel":"limitExceeded","kind":"disk"}}`, "must be one of cpu, memory, wallClock, output"},
		{"field of another channel", `{"ok":false,"failure":{"channel":"scriptMissing","scriptRef":"r","message":"m"}}`, `"failure"."message": unknown member`},
		{"limitBytes negative", `{"ok":false,"failure":{"channel":"inputTooLarge","limitBytes":-1}}`, "non-negative integer"},
		{"limitBytes string", `{"ok":false,"failure":{"channel":"inputTooLarge","limitBytes":"1"}}`, "non-negative integer"},
		{"shapeMismatch half", `{"ok":false,"failure":{"channel":"shapeMismatch","expected":"a"}}`, `"observed": missing`},
		{"logs number", `{"ok":true,"value":1,"logs":3}`, `"logs": must be a string`},
		{"duplicate", `{"ok":true,"value":1,"value":1}`, "duplicate member"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err, _ := evaluations(t, tc.body, 200, client.EvaluationRequest{ScriptRef: ref})
			var e *client.Error
			if !errors.As(err, &e) || e.StatusCode != 200 || e.Retryable() {
				t.Fatalf("error %v, want a non-retryable *client.Error", err)
			}
			if !strings.Contains(err.Error(), "malformed response: ") || !strings.Contains(err.Error(), tc.fragment) {
				t.Errorf("error %q lacks %q", err, tc.fragment)
			}
		})
	}
}

func TestEvaluationsCancelled(t *testing.T) {
	started := make(chan struct{})
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
	})
	c := dial(t, f.URL)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	if _, err := c.Evaluations(ctx, client.EvaluationRequest{ScriptRef: ref}); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

// TestEvaluationsReadsWhatTheEffectWrites: every channel as the effect
// marshals it (the service sends spi.Failure as it is) decodes back to the
// same Failure.
func TestEvaluationsReadsWhatTheEffectWrites(t *testing.T) {
	for _, want := range []*spi.Failure{
		{Channel: spi.ChannelLimitExceeded, Kind: spi.LimitWallClock},
		{Channel: spi.ChannelScriptError, Name: ptr("Error"), Message: "é\u2028<x>"},
		{Channel: spi.ChannelScriptError, Message: ""},
		{Channel: spi.ChannelShapeMismatch, Expected: "sha256:aa", Observed: "sha256:bb"},
		{Channel: spi.ChannelScriptMissing, ScriptRef: ref},
		{Channel: spi.ChannelInputTooLarge, LimitBytes: 4096},
		{Channel: spi.ChannelInputNotSerializable, Message: "m"},
	} {
		b, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err, _ := evaluations(t, `{"ok":false,"failure":`+string(b)+`}`, 200, client.EvaluationRequest{ScriptRef: ref})
		if err != nil {
			t.Errorf("%s: %v", b, err)
			continue
		}
		if !reflect.DeepEqual(got.Failure, want) {
			t.Errorf("%s: decoded %+v", b, got.Failure)
		}
	}
}
