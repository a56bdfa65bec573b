package service

import (
	"errors"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestConfigValidation(t *testing.T) {
	t.Setenv("STORE_URL", "none")
	c, err := LoadConfig()
	if err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if c.Port != "8080" || c.MaxConcurrentEvaluations != 1 || c.RequestTimeout != time.Minute || !c.ProcessKill {
		t.Fatalf("defaults: %+v", c)
	}
	t.Setenv("MAX_WALL_CLOCK", "2m")
	t.Setenv("MAX_CONCURRENT_EVALUATIONS", "2")
	t.Setenv("OTEL_EXPORTER", "zipkin")
	t.Setenv("AUTH_AUDIENCE", "https://x")
	t.Setenv("WORKER_LOCKDOWN", "sometimes")
	t.Setenv("MAX_HEADER_BYTES", "100")
	_, err = LoadConfig()
	if err == nil {
		t.Fatal("bad configuration accepted")
	}
	for _, want := range []string{"REQUEST_TIMEOUT", "WORKER_LOCKDOWN", "MAX_HEADER_BYTES", "OTEL_EXPORTER", "AUTH_ALLOWED_CALLERS"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s:\n%v", want, err)
		}
	}
	// every variable that does not parse is reported, beside every check
	// that fails
	t.Setenv("MAX_INPUT_BYTES", "nope")
	t.Setenv("MAX_WALL_CLOCK", "abc")
	t.Setenv("DEFAULT_WALL_CLOCK", "xyz")
	t.Setenv("PORT", "-1")
	_, err = LoadConfig()
	for _, want := range []string{"MAX_INPUT_BYTES", "MAX_WALL_CLOCK", "DEFAULT_WALL_CLOCK", "PORT", "OTEL_EXPORTER", "WORKER_LOCKDOWN"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not mention %s:\n%v", want, err)
		}
	}
}

// README.md's configuration table is the defaults: every variable of Config
// is a row, and setting each row's default explicitly loads the same
// configuration as an empty environment (Defaults). A default restated
// differently in the README, or a variable missing from it, fails here.
func TestREADMEConfigurationTableIsTheDefaults(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([A-Z_]+)` \\| ([^|]*) \\|")
	rows := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(readme), -1) {
		rows[m[1]] = strings.TrimSpace(m[2])
	}
	typ := reflect.TypeOf(Config{})
	for i := range typ.NumField() {
		name := typ.Field(i).Tag.Get("envconfig")
		def, ok := rows[name]
		if !ok {
			t.Errorf("README's configuration table has no row for %s", name)
			continue
		}
		delete(rows, name)
		if v, ok := strings.CutPrefix(def, "`"); ok {
			t.Setenv(name, strings.TrimSuffix(v, "`"))
		} else if !strings.HasPrefix(def, "(none") {
			t.Errorf("%s: README's default %q is neither a `value` nor (none)", name, def)
		}
	}
	for name := range rows {
		t.Errorf("README's configuration table has %s, which Config does not read", name)
	}
	got, err := LoadConfig()
	if err != nil {
		t.Fatalf("README's defaults: %v", err)
	}
	if want := Defaults(); !reflect.DeepEqual(got, want) {
		t.Errorf("README's defaults load as\n%+v\nDefaults() is\n%+v", got, want)
	}
	if errs := Defaults().Validate(); len(errs) != 0 {
		t.Errorf("the defaults do not validate: %v", errs)
	}
}

// The engine's and the workers' ranges are the packages' own, reported with
// every other problem: a memory maximum over the engine's 2 GiB is refused
// here, not when the first worker starts. The request timeout must leave
// room for the caller's whole deadline: wall clock, hard kill, backstop and
// the second the answer may take.
func TestConfigValidationUsesThePackagesChecks(t *testing.T) {
	c := Defaults()
	c.StoreURL = "none"
	c.MaxMemoryBytes = 4 << 30
	c.PoolSize = 65
	c.WorkerSpares = 9
	c.MaxConcurrentEvaluations = 0
	c.OTelExporter = "zipkin"
	errs := c.Validate()
	text := errors.Join(errs...).Error()
	for _, want := range []string{
		"MAX_MEMORY_BYTES must be in [1 MiB, 2 GiB], got 4294967296",
		"POOL_SIZE must be in [0, 64], got 65",
		"WORKER_SPARES must be in [0, 8], got 9",
		"MAX_CONCURRENT_EVALUATIONS must be >= 1, got 0",
		"OTEL_EXPORTER",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the problems do not say %q:\n%s", want, text)
		}
	}

	for _, tc := range []struct {
		wall, grace, timeout time.Duration
		ok                   bool
	}{
		{58 * time.Second, 500 * time.Millisecond, time.Minute, false}, // 58 + 2 x 0.5 + 1 = 60
		{57 * time.Second, 500 * time.Millisecond, time.Minute, true},
		{30 * time.Second, 15 * time.Second, time.Minute, false},
		{30 * time.Second, 14 * time.Second, time.Minute, true},
	} {
		c := Defaults()
		c.MaxWallClock, c.HardKillGrace, c.RequestTimeout = tc.wall, tc.grace, tc.timeout
		errs := c.Validate()
		if ok := len(errs) == 0; ok != tc.ok {
			t.Errorf("MAX_WALL_CLOCK %v, HARD_KILL_GRACE %v, REQUEST_TIMEOUT %v: accepted %v, want %v (%v)", tc.wall, tc.grace, tc.timeout, ok, tc.ok, errs)
		}
		if !tc.ok && (len(errs) != 1 || !strings.Contains(errs[0].Error(), "must be below REQUEST_TIMEOUT")) {
			t.Errorf("MAX_WALL_CLOCK %v, HARD_KILL_GRACE %v: %v", tc.wall, tc.grace, errs)
		}
	}
	c = Defaults()
	c.HardKillGrace = 2 * time.Minute
	if text := errors.Join(c.Validate()...).Error(); !strings.Contains(text, "HARD_KILL_GRACE must be in (0, 1m], got 2m0s") {
		t.Errorf("a grace over a minute: %s", text)
	}
}

// A default memory limit below the engine's minimum is a start-up problem:
// every request that takes the default would fail.
func TestDefaultMemoryBelowTheEngineMinimum(t *testing.T) {
	t.Setenv("STORE_URL", "none")
	t.Setenv("DEFAULT_MEMORY_BYTES", "4096")
	_, err := LoadConfig()
	if err == nil || !strings.Contains(err.Error(), "DEFAULT_MEMORY_BYTES must be at least 262144") {
		t.Errorf("DEFAULT_MEMORY_BYTES=4096: %v", err)
	}
	t.Setenv("DEFAULT_MEMORY_BYTES", "262144")
	if _, err := LoadConfig(); err != nil {
		t.Errorf("DEFAULT_MEMORY_BYTES at the minimum: %v", err)
	}
}
