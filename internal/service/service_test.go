package service

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"testing"

	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
)

// The service built from an empty environment (Defaults) advertises the
// limits and the engine README's GET /v1/capabilities example shows, so that
// a default restated differently anywhere on the way (the configuration, the
// handler, the effect, the engine) fails here, and so does an example left
// behind by an engine upgrade.
func TestServiceFromDefaultsAdvertisesREADMELimits(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\{"spiVersion".*"limits":(\{[^}]*\}).*"engine":(\{[^}]*\}).*$`).FindSubmatch(readme)
	if m == nil {
		t.Fatal("README has no capabilities example")
	}
	var want map[string]int64
	if err := json.Unmarshal(m[1], &want); err != nil {
		t.Fatal(err)
	}
	wantEngine := string(m[2])

	ctx := context.Background()
	store, err := contentstore.NewMemStore(contentstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Defaults()
	cfg.ProcessKill = false // the engine runs in this test's process
	svc, err := New(ctx, cfg, Options{Store: store, Backend: InProcess()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(ctx) })
	srv := httptest.NewServer(svc.Handler)
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/v1/capabilities")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var got struct {
		Limits map[string]int64 `json:"limits"`
		Engine json.RawMessage  `json:"engine"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	for k, v := range want {
		if got.Limits[k] != v {
			t.Errorf("limits.%s: the service from Defaults says %d, README %d", k, got.Limits[k], v)
		}
	}
	if len(got.Limits) != len(want) {
		t.Errorf("limits: the service says %v, README %v", got.Limits, want)
	}
	if string(got.Engine) != wantEngine {
		t.Errorf("engine: the service says %s, README %s", got.Engine, wantEngine)
	}
}
