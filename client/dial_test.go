package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/client"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

func TestDialReadsAndFreezesCapabilities(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/prefix/v1/capabilities" {
			http.NotFound(w, r)
			return
		}
		calls.Add(1)
		writeJSON(w, http.StatusOK, capsDoc)
	}))
	defer srv.Close()
	c := dial(t, srv.URL+"/prefix/")

	if got := c.Capabilities(); got != wantCaps {
		t.Errorf("Capabilities() = %+v, want %+v", got, wantCaps)
	}
	if c.SPIVersion() != "1.0.0" {
		t.Errorf("SPIVersion() = %q", c.SPIVersion())
	}
	want := client.Engine{Name: "quickjs", Version: "2025-04-26", WasmSHA256: goldenSHA}
	if got := c.Engine(); got != want {
		t.Errorf("Engine() = %+v, want %+v", got, want)
	}
	l := c.Limits()
	if l.DefaultWallClock != 5*time.Second || l.MaxWallClock != 30*time.Second || l.DefaultMemoryBytes != 64<<20 ||
		l.MaxMemoryBytes != 256<<20 || l.MaxInputBytes != 1<<20 || l.MaxOutputBytes != 1<<20 || l.MaxScriptBytes != 1<<20 {
		t.Errorf("Limits() = %+v", l)
	}
	if !strings.Contains(string(l.Raw), `"maxRequestBytes":16777216`) {
		t.Errorf("Limits().Raw = %s, want the member this client does not know kept", l.Raw)
	}
	l.Raw[0] = 'X' // the caller's copy; the client's stays as read
	if c.Limits().Raw[0] != '{' {
		t.Errorf("Limits().Raw aliases the client's copy")
	}
	_ = c.Capabilities()
	_ = c.Limits()
	if n := calls.Load(); n != 1 {
		t.Errorf("GET /v1/capabilities called %d times, want once (at Dial)", n)
	}
}

func TestDialAcceptsSameMajor(t *testing.T) {
	for _, v := range []string{"1.0.0", "1.7.3", "1.0.1-rc.1"} {
		doc := strings.Replace(capsDoc, `"1.0.0"`, `"`+v+`"`, 1)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, doc) }))
		c, err := client.Dial(context.Background(), srv.URL)
		srv.Close()
		if err != nil {
			t.Errorf("spiVersion %s: %v", v, err)
			continue
		}
		if c.SPIVersion() != v {
			t.Errorf("spiVersion %s: got %s", v, c.SPIVersion())
		}
	}
}

func TestDialRefuses(t *testing.T) {
	replace := func(old, new string) string {
		if !strings.Contains(capsDoc, old) {
			t.Fatalf("capsDoc lacks %q", old)
		}
		return strings.Replace(capsDoc, old, new, 1)
	}
	for _, tc := range []struct {
		name, doc, contentType string
		want                   error
		fragment               string
	}{
		{"major 2", replace(`"1.0.0"`, `"2.0.0"`), "", client.ErrIncompatibleSPI, "2.0.0"},
		{"major 0", replace(`"1.0.0"`, `"0.9.0"`), "", client.ErrIncompatibleSPI, "0.9.0"},
		{"not semver", replace(`"1.0.0"`, `"1"`), "", client.ErrInvalidCapabilities, "semantic version"},
		{"leading zero", replace(`"1.0.0"`, `"01.0.0"`), "", client.ErrInvalidCapabilities, "semantic version"},
		{"spiVersion number", replace(`"1.0.0"`, `1`), "", client.ErrInvalidCapabilities, `"spiVersion": must be a string`},
		{"no spiVersion", replace(`"spiVersion":"1.0.0",`, ``), "", client.ErrInvalidCapabilities, `"spiVersion": missing`},
		{"unknown capability", replace(`"freshPerRun":true`, `"freshPerRun":true,"gpu":true`), "", client.ErrInvalidCapabilities, `"capabilities"."gpu": unknown member`},
		{"missing capability", replace(`"memory":true,`, ``), "", client.ErrInvalidCapabilities, `"capabilities"."memory": missing`},
		{"network value", replace(`"network":"none"`, `"network":"some"`), "", client.ErrInvalidCapabilities, "must be one of none, allowlist, open"},
		{"wallClock value", replace(`"wallClock":"hard"`, `"wallClock":"firm"`), "", client.ErrInvalidCapabilities, "must be one of hard, soft"},
		{"bool as string", replace(`"cpu":true`, `"cpu":"true"`), "", client.ErrInvalidCapabilities, `"cpu": must be a boolean, got a string`},
		{"null capability", replace(`"freshPerRun":true`, `"freshPerRun":null`), "", client.ErrInvalidCapabilities, "must be a boolean, got null"},
		{"empty language", replace(`"language":"javascript"`, `"language":""`), "", client.ErrInvalidCapabilities, "must not be empty"},
		{"capabilities array", replace(`"capabilities":{`, `"capabilities":[{`), "", client.ErrInvalidCapabilities, "not JSON"},
		{"unknown engine member", replace(`"name":"quickjs",`, `"name":"quickjs","build":"x",`), "", client.ErrInvalidCapabilities, `"engine"."build": unknown member`},
		{"limits a string", replace(`"limits":{`, `"limits":"none","limitsX":{`), "", client.ErrInvalidCapabilities, `"limits": a JSON object is required`},
		{"duplicate member", replace(`"spiVersion":"1.0.0",`, `"spiVersion":"1.0.0","spiVersion":"1.0.0",`), "", client.ErrInvalidCapabilities, "duplicate member"},
		{"negative limit", replace(`"maxInputBytes":1048576`, `"maxInputBytes":-1`), "", client.ErrInvalidCapabilities, "non-negative integer"},
		{"fractional limit", replace(`"maxInputBytes":1048576`, `"maxInputBytes":1.5`), "", client.ErrInvalidCapabilities, "non-negative integer"},
		{"no limits", replace(`"limits":{`, `"limitz":{`), "", client.ErrInvalidCapabilities, `"limits": missing`},
		{"bad sha", replace(goldenSHA, strings.ToUpper(goldenSHA)), "", client.ErrInvalidCapabilities, "64 lowercase hex"},
		{"no engine version", replace(`"version":"2025-04-26",`, ``), "", client.ErrInvalidCapabilities, `"version": missing`},
		{"trailing data", capsDoc + ` {}`, "", client.ErrInvalidCapabilities, "data after the JSON value"},
		{"not JSON", `<html>`, "", client.ErrInvalidCapabilities, "not JSON"},
		{"wrong content type", capsDoc, "text/plain", client.ErrInvalidCapabilities, "Content-Type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ct := tc.contentType
				if ct == "" {
					ct = "application/json"
				}
				w.Header().Set("Content-Type", ct)
				_, _ = w.Write([]byte(tc.doc))
			}))
			defer srv.Close()
			c, err := client.Dial(context.Background(), srv.URL)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Dial = %v, %v; want %v", c, err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.fragment) {
				t.Errorf("error %q lacks %q", err, tc.fragment)
			}
		})
	}
}

func TestDialReportsProblemsAndBadURLs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, http.StatusServiceUnavailable, "engine warming", `"retryable":true`)
	}))
	defer srv.Close()
	_, err := client.Dial(context.Background(), srv.URL)
	var e *client.Error
	if !errors.As(err, &e) || e.StatusCode != 503 || e.Problem == nil || e.Problem.Detail != "engine warming" || !e.Retryable() {
		t.Errorf("Dial against a 503 problem = %v (%+v)", err, e)
	}

	for _, u := range []string{"ftp://x", "http://", "http://user:pw@host", "http://host/?q=1", "http://host/#f", "::"} {
		if _, err := client.Dial(context.Background(), u); err == nil {
			t.Errorf("Dial(%q) succeeded", u)
		} else if strings.Contains(err.Error(), "pw") {
			t.Errorf("Dial(%q) error repeats the password: %v", u, err)
		}
	}
	if _, err := client.Dial(context.Background(), srv.URL, client.WithMaxResponseBytes(0)); err == nil {
		t.Errorf("WithMaxResponseBytes(0) accepted")
	}
}

func TestWarmAndClose(t *testing.T) {
	var ready atomic.Bool
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		if !ready.Load() {
			writeProblem(w, http.StatusServiceUnavailable, "engine not warm yet", "")
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	c := dial(t, f.URL)
	var b spi.Backend = c
	warmer, ok := b.(spi.Warmer)
	if !ok {
		t.Fatal("Client does not implement spi.Warmer")
	}
	err := warmer.Warm(context.Background())
	var e *client.Error
	if !errors.As(err, &e) || e.StatusCode != 503 || !strings.Contains(err.Error(), "engine not warm yet") {
		t.Errorf("Warm before ready = %v", err)
	}
	ready.Store(true)
	if err := warmer.Warm(context.Background()); err != nil {
		t.Errorf("Warm when ready = %v", err)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Errorf("Close = %v", err)
	}
	if err := c.Warm(context.Background()); err != nil {
		t.Errorf("Warm after Close = %v; the client stays usable", err)
	}
}
