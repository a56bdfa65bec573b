package service

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/worker"
)

// fromMap is the Environment of env's variables alone.
func fromMap(env map[string]string) Environment {
	return LookupEnvironment(func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	})
}

func TestConfigValidation(t *testing.T) {
	env := map[string]string{"STORE_URL": "none"}
	c, err := LoadConfig(fromMap(env))
	if err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if c.Port != "8080" || c.MaxConcurrentEvaluations != 1 || c.RequestTimeout != time.Minute || !c.ProcessKill {
		t.Fatalf("defaults: %+v", c)
	}
	env["MAX_WALL_CLOCK"] = "2m"
	env["MAX_CONCURRENT_EVALUATIONS"] = "2"
	env["OTEL_EXPORTER"] = "zipkin"
	env["AUTH_AUDIENCE"] = "https://x"
	env["WORKER_LOCKDOWN"] = "sometimes"
	env["MAX_HEADER_BYTES"] = "100"
	_, err = LoadConfig(fromMap(env))
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
	env["MAX_INPUT_BYTES"] = "nope"
	env["MAX_WALL_CLOCK"] = "abc"
	env["DEFAULT_WALL_CLOCK"] = "xyz"
	env["PORT"] = "-1"
	_, err = LoadConfig(fromMap(env))
	for _, want := range []string{"MAX_INPUT_BYTES", "MAX_WALL_CLOCK", "DEFAULT_WALL_CLOCK", "PORT", "OTEL_EXPORTER", "WORKER_LOCKDOWN"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not mention %s:\n%v", want, err)
		}
	}
}

var updateReadme = flag.Bool("update-readme", false, "rewrite README.md's configuration table from Config's declarations")

// README.md's configuration table is made of Config's declarations: a row
// per field, in their order, of its variable, its default (`value`, or
// (none) for a field without one) and its comment, which says what the
// setting is for. Every variable is a row whose default is the tag's; every
// default parses; and the defaults validate. A variable missing from the
// README, a row for a variable the service does not read, or a default or
// meaning written differently in the two fails here; -update-readme
// rewrites the table:
//
//	go test ./service -run TestREADMEConfigurationTableIsTheDefaults -update-readme
func TestREADMEConfigurationTableIsTheDefaults(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	row := regexp.MustCompile("(?m)^\\| `([A-Z_]+)` \\| ([^|]*) \\|")
	rows := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(readme, -1) {
		rows[m[1]] = strings.TrimSpace(m[2])
	}
	seen := map[string]bool{}
	for _, s := range settings() {
		name, def := s.name, s.def
		if seen[name] {
			t.Errorf("%s names two fields of Config", name)
		}
		seen[name] = true
		readme, ok := rows[name]
		if !ok {
			t.Errorf("README's configuration table has no row for %s", name)
			continue
		}
		delete(rows, name)
		switch {
		case def == "" && !strings.HasPrefix(readme, "(none"):
			t.Errorf("%s has no default, and README's is %q, not (none…)", name, readme)
		case def != "" && readme != "`"+def+"`":
			t.Errorf("%s: README's default is %s, the tag's `%s`", name, readme, def)
		}
	}
	for name := range rows {
		t.Errorf("README's configuration table has %s, which Config does not read", name)
	}

	table := regexp.MustCompile("(?m)^\\| variable \\| default \\| meaning \\|\n(?:\\|.*\\|\n)+")
	loc := table.FindStringIndex(readme)
	if loc == nil {
		t.Fatal("README.md has no configuration table (| variable | default | meaning |)")
	}
	if want := configurationTable(t); readme[loc[0]:loc[1]] != want {
		if *updateReadme {
			if err := os.WriteFile("../README.md", []byte(readme[:loc[0]]+want+readme[loc[1]:]), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Log("rewrote README.md's configuration table")
		} else {
			t.Errorf("README.md's configuration table is not the one Config's declarations make (-update-readme rewrites it); they make\n%s", want)
		}
	}

	if _, unparsed := parse(fromMap(nil)); len(unparsed) != 0 {
		t.Errorf("defaults that do not parse: %v", unparsed)
	}
	if errs := Defaults().Validate(); len(errs) != 0 {
		t.Errorf("the defaults do not validate: %v", errs)
	}
}

// configurationTable is README.md's configuration table as Config's
// declarations in config.go make it: each field's variable and default from
// its tags, and its meaning from its comment, on one line.
func configurationTable(t *testing.T) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "config.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var fields []*ast.Field
	ast.Inspect(f, func(n ast.Node) bool {
		if ts, ok := n.(*ast.TypeSpec); ok && ts.Name.Name == "Config" {
			fields = ts.Type.(*ast.StructType).Fields.List
		}
		return fields == nil
	})
	if len(fields) != len(settings()) {
		t.Fatalf("config.go declares %d fields of Config, settings() reads %d", len(fields), len(settings()))
	}
	var sb strings.Builder
	sb.WriteString("| variable | default | meaning |\n| --- | --- | --- |\n")
	for i, s := range settings() {
		doc := strings.Join(strings.Fields(fields[i].Doc.Text()), " ")
		if doc == "" || strings.Contains(doc, "|") {
			t.Errorf("Config's field of %s says what it is for in no comment, or with a | that would end its cell: %q", s.name, doc)
		}
		def := "(none)"
		if s.def != "" {
			def = "`" + s.def + "`"
		}
		fmt.Fprintf(&sb, "| `%s` | %s | %s |\n", s.name, def, doc)
	}
	return sb.String()
}

// Where a setting is a package's own, its default is that package's: the
// tag restates the constant, and this holds the two together.
func TestDefaultsAreThePackagesOwn(t *testing.T) {
	d := Defaults()
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"MAX_SCRIPT_BYTES", d.MaxScriptBytes, contentstore.DefaultMaxScriptBytes},
		{"SCRIPT_CACHE_BYTES", d.ScriptCacheBytes, contentstore.DefaultCacheBytes},
		{"SCRIPT_CONFIRM_AFTER", d.ScriptConfirmAfter, contentstore.DefaultConfirmAfter},
		{"MAX_MEMORY_BYTES", d.MaxMemoryBytes, quickjs.DefaultMaxMemoryBytes},
		{"MAX_INPUT_BYTES", d.MaxInputBytes, effect.DefaultMaxInputBytes},
		{"MAX_OUTPUT_BYTES", d.MaxOutputBytes, effect.DefaultMaxOutputBytes},
		{"HARD_KILL_GRACE", d.HardKillGrace, quickjs.DefaultHardKillGrace},
		{"CPU_BUDGET", d.CPUBudget, quickjs.DefaultCPUBudget},
		{"POOL_SIZE", d.PoolSize, quickjs.DefaultPoolSize},
		{"WORKER_LOCKDOWN", d.WorkerLockdown, string(worker.LockdownRequired)},
	} {
		if fmt.Sprint(tc.got) != fmt.Sprint(tc.want) {
			t.Errorf("%s defaults to %v, the package's own default is %v", tc.name, tc.got, tc.want)
		}
	}
}

// envconfig, reading the process's environment (ReadEnvironment), and
// LookupEnvironment, reading a lookup's by the same tags, read alike: a
// variable set is its value, one set to nothing is empty, one unset is its
// default. The tests of the parsing pass maps, so this is what makes them
// tests of what serve reads.
func TestEnvironmentIsReadAsEnvconfigReadsIt(t *testing.T) {
	set := map[string]string{"PORT": "9090", "MAX_WALL_CLOCK": "abc", "LOG_LEVEL": "", "AUTH_AUDIENCE": "https://x"}
	for _, name := range Variables() {
		if v, ok := set[name]; ok {
			t.Setenv(name, v)
			continue
		}
		t.Setenv(name, "") // restores the variable after the test
		os.Unsetenv(name)
	}
	got, err := ReadEnvironment()
	if err != nil {
		t.Fatal(err)
	}
	if want := LookupEnvironment(os.LookupEnv); !maps.Equal(got, want) {
		t.Errorf("envconfig read\n%+v\nLookupEnvironment\n%+v", got, want)
	}
	if got["PORT"] != "9090" || got["MAX_WALL_CLOCK"] != "abc" || got["LOG_LEVEL"] != "" || got["AUTH_AUDIENCE"] != "https://x" ||
		got["STORE_URL"] != "examples/store" || got["MAX_MEMORY_BYTES"] != "268435456" || got["COMPILATION_CACHE_DIR"] != "" {
		t.Errorf("read %+v", got)
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

// A variable that does not parse is reported as what it must be, with its
// value and an example, in the words of the setting and not of the Go
// function that parsed it.
func TestConfigParseProblemsSayWhatIsWanted(t *testing.T) {
	_, err := LoadConfig(fromMap(map[string]string{
		"STORE_URL":       "none",
		"MAX_INPUT_BYTES": "1MB",
		"MAX_WALL_CLOCK":  "30",
		"REQUEST_TIMEOUT": "soon",
		"PROCESS_KILL":    "yes",
		"CPU_BUDGET":      "-1",
		"POOL_SIZE":       "99999999999999999999",
		"LOG_LEVEL":       "verbose",
	}))
	if err == nil {
		t.Fatal("accepted")
	}
	text := err.Error()
	for _, want := range []string{
		`MAX_INPUT_BYTES must be a whole number of bytes, such as 1048576, got "1MB"`,
		`MAX_WALL_CLOCK must be a duration with a unit (ms, s, m, h), such as 30s; a number alone has no unit, got "30"`,
		`REQUEST_TIMEOUT must be a duration with a unit (ms, s, m, h), such as 1m, got "soon"`,
		`PROCESS_KILL must be true or false, got "yes"`,
		`CPU_BUDGET must be a whole number, 0 or more, such as 1000000, got "-1"`,
		`POOL_SIZE must be a whole number in [-9223372036854775808, 9223372036854775807], got "99999999999999999999"`,
		`LOG_LEVEL must be debug, info, warn or error, got "verbose"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the problems do not say\n%s\n%s", want, text)
		}
	}
	for _, internal := range []string{"strconv", "parsing", "time:", "invalid syntax", "ParseError"} {
		if strings.Contains(text, internal) {
			t.Errorf("the problems show Go's %q:\n%s", internal, text)
		}
	}
}

// A variable that does not parse keeps its default and is reported once,
// in its own words: no check judges that default against another
// variable's value. What a check leaves out is decided by the variables it
// reads, never by what its message happens to quote.
func TestConfigUnparsedVariableReportedOnce(t *testing.T) {
	_, err := LoadConfig(fromMap(map[string]string{
		"STORE_URL":            "none",
		"DEFAULT_MEMORY_BYTES": "64MiB",
		"MAX_MEMORY_BYTES":     "1048576", // below the default's 64 MiB
	}))
	if want := `configuration:` + "\n" + `DEFAULT_MEMORY_BYTES must be a whole number of bytes, such as 67108864, got "64MiB"`; err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}

	_, err = LoadConfig(fromMap(map[string]string{
		"STORE_URL":       "ftp://MAX_WALL_CLOCK",
		"MAX_WALL_CLOCK":  "abc",
		"REQUEST_TIMEOUT": "10s", // below the default wall clock's deadline
	}))
	if err == nil {
		t.Fatal("accepted")
	}
	text := err.Error()
	for _, want := range []string{
		`MAX_WALL_CLOCK must be a duration with a unit (ms, s, m, h), such as 30s, got "abc"`,
		`STORE_URL "ftp://MAX_WALL_CLOCK": unsupported scheme "ftp"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the problems do not say\n%s\n%s", want, text)
		}
	}
	if strings.Contains(text, "must be below REQUEST_TIMEOUT") || strings.Count(text, "\n") != 2 {
		t.Errorf("want the two problems alone:\n%s", text)
	}
}

// Each kind of value is read as the service has always read it: numbers as
// Go writes them, a list split at its commas with its items as written, an
// empty value as a value (a number cannot be empty), an unset variable as
// its default.
func TestConfigReadsEachKind(t *testing.T) {
	c, err := LoadConfig(fromMap(map[string]string{
		"STORE_URL":            "none",
		"MAX_SCRIPT_BYTES":     "0x80000",
		"POOL_SIZE":            "1_0",
		"CPU_BUDGET":           "0",
		"PROCESS_KILL":         "0",
		"HARD_KILL_GRACE":      "1s",
		"AUTH_AUDIENCE":        "https://x",
		"AUTH_ALLOWED_CALLERS": "a@example.com, b@example.com",
		"GOOGLE_CLOUD_PROJECT": "",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := Defaults()
	want.StoreURL, want.MaxScriptBytes, want.PoolSize, want.CPUBudget, want.ProcessKill, want.HardKillGrace =
		"none", 512<<10, 10, 0, false, time.Second
	want.AuthAudience, want.AuthAllowedCallers = "https://x", []string{"a@example.com", " b@example.com"}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got\n%+v\nwant\n%+v", c, want)
	}
	_, err = LoadConfig(fromMap(map[string]string{"STORE_URL": "none", "WORKER_SPARES": ""}))
	if want := `WORKER_SPARES must be a whole number, such as 1, got ""`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("an empty number: %v", err)
	}
}

// The request body's cap holds a script and an input at their bounds with
// every byte escaped (api.MinRequestBytes): the default does, and a cap
// that would not, or bounds that outgrow it, are refused at start-up.
func TestConfigRequestBytesHoldEscapedRequests(t *testing.T) {
	d := Defaults()
	if least := api.MinRequestBytes(d.MaxScriptBytes, d.MaxInputBytes); d.MaxRequestBytes < least {
		t.Fatalf("the default MAX_REQUEST_BYTES %d is below %d", d.MaxRequestBytes, least)
	}
	for _, env := range []map[string]string{
		{"MAX_REQUEST_BYTES": "4194304"},
		{"MAX_INPUT_BYTES": "4194304"},
		{"MAX_SCRIPT_BYTES": "2097152"},
	} {
		env["STORE_URL"] = "none"
		_, err := LoadConfig(fromMap(env))
		if err == nil || !strings.Contains(err.Error(), "with every byte escaped") {
			t.Errorf("%v: %v, want the escaped request named", env, err)
		}
	}
	if _, err := LoadConfig(fromMap(map[string]string{"STORE_URL": "none", "MAX_SCRIPT_BYTES": "2097152", "MAX_REQUEST_BYTES": "20000000"})); err != nil {
		t.Errorf("a cap raised with the bound: %v", err)
	}
}

// Each wall clock that is not positive is blamed alone, and their order is
// not checked on top.
func TestConfigWallClocksBlamedAlone(t *testing.T) {
	c := Defaults()
	c.DefaultWallClock = -time.Second
	text := errors.Join(c.Validate()...).Error()
	if want := "DEFAULT_WALL_CLOCK must be positive, got -1s"; text != want {
		t.Errorf("got\n%s\nwant\n%s", text, want)
	}
	c = Defaults()
	c.MaxWallClock = 0
	if text := errors.Join(c.Validate()...).Error(); !strings.HasPrefix(text, "MAX_WALL_CLOCK must be positive, got 0s") ||
		strings.Contains(text, "DEFAULT_WALL_CLOCK") {
		t.Errorf("got\n%s", text)
	}
}

// STORE_URL's form is checked with every other variable, and a URL of no
// accepted form lists them all, none included.
func TestConfigStoreURLReportedWithTheOthers(t *testing.T) {
	_, err := LoadConfig(fromMap(map[string]string{"STORE_URL": "ftp://x", "OTEL_EXPORTER": "zipkin"}))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		`STORE_URL "ftp://x": unsupported scheme "ftp" (want gs://bucket/prefix, file:///path, a directory path, mem:, or none)`,
		`OTEL_EXPORTER must be none, stdout or otlp, got "zipkin"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the problems do not say\n%s\n%s", want, err)
		}
	}
	for _, ok := range []string{"none", "mem:", "examples/store", "file:///srv/scripts", "gs://my-bucket/p"} {
		if _, err := LoadConfig(fromMap(map[string]string{"STORE_URL": ok})); err != nil {
			t.Errorf("STORE_URL=%s: %v", ok, err)
		}
	}
}

// serve refuses to start on what the configuration names on this host and
// is not there, reported with every other problem: a local store directory
// that does not exist (every reference would be answered as missing) and a
// compilation cache directory that cannot be created (no worker would ever
// start). The put verb's LoadConfig does not check the store: put creates
// it.
func TestServeConfigChecksTheHost(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such-store")
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"STORE_URL":             missing,
		"COMPILATION_CACHE_DIR": filepath.Join(file, "cache"),
		"SHUTDOWN_TIMEOUT":      "0s",
	}
	_, err := LoadServeConfig(fromMap(env))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		`STORE_URL "` + missing + `": the store directory ` + missing + ` does not exist (create it, for example with the put verb, or correct the path)`,
		`COMPILATION_CACHE_DIR "` + filepath.Join(file, "cache") + `" cannot be created: mkdir ` + file + `: not a directory (name a directory this process can create and write, or leave it unset to compile the engine at start)`,
		"SHUTDOWN_TIMEOUT must be positive, got 0s",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the problems do not say\n%s\n%s", want, err)
		}
	}
	env["STORE_URL"] = "file://" + file
	if _, err := LoadServeConfig(fromMap(env)); err == nil || !strings.Contains(err.Error(), file+" is not a directory") {
		t.Errorf("a store that is a file: %v", err)
	}

	env["STORE_URL"] = missing
	env["COMPILATION_CACHE_DIR"] = ""
	env["SHUTDOWN_TIMEOUT"] = "10s"
	if _, err := LoadConfig(fromMap(env)); err != nil {
		t.Errorf("LoadConfig (put, eval) checks the host: %v", err)
	}
	// and the same with the directories there: the cache is made
	cache := filepath.Join(dir, "new", "cache")
	env["COMPILATION_CACHE_DIR"] = cache
	if err := os.Mkdir(missing, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadServeConfig(fromMap(env)); err != nil {
		t.Errorf("with the directories there: %v", err)
	}
	if fi, err := os.Stat(cache); err != nil || !fi.IsDir() {
		t.Errorf("the cache directory was not made: %v", err)
	}
}

// New checks the same, except the store when Options.Store replaces it.
func TestNewChecksTheHost(t *testing.T) {
	cfg := Defaults()
	cfg.StoreURL = filepath.Join(t.TempDir(), "absent")
	ctx := context.Background()
	if _, err := New(ctx, cfg, Options{Backend: InProcess()}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("New with a store directory that does not exist: %v", err)
	}
	store, err := contentstore.NewMemStore(contentstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := New(ctx, cfg, Options{Store: store, Backend: InProcess()})
	if err != nil {
		t.Fatalf("New with Options.Store: %v", err)
	}
	svc.Close(ctx)
}

// A variable that names one of the service's settings in another spelling
// is found, with the setting and what its value is: the same words in
// another case, order or separation, with a unit added or dropped (the
// API's camelCase names invite these), or a letter or two off.
func TestLookalikesFindsOtherSpellings(t *testing.T) {
	for name, known := range map[string]string{
		"MAX_WALL_CLOCK_MS":          "MAX_WALL_CLOCK",
		"WALL_CLOCK_MAX_MS":          "MAX_WALL_CLOCK",
		"DEFAULT_WALL_CLOCK_MS":      "DEFAULT_WALL_CLOCK",
		"MAX_WALL_CLOCK_SECONDS":     "MAX_WALL_CLOCK",
		"maxWallClockMs":             "MAX_WALL_CLOCK",
		"MaxWallClockMs":             "MAX_WALL_CLOCK",
		"max_wall_clock":             "MAX_WALL_CLOCK",
		"max-wall-clock-ms":          "MAX_WALL_CLOCK",
		"MAX_MEMORY":                 "MAX_MEMORY_BYTES",
		"MAX_MEMORY_MB":              "MAX_MEMORY_BYTES",
		"maxMemoryBytes":             "MAX_MEMORY_BYTES",
		"DEFAULT_MEMORY":             "DEFAULT_MEMORY_BYTES",
		"MEMORY_BYTES_DEFAULT":       "DEFAULT_MEMORY_BYTES",
		"MAX_INPUT":                  "MAX_INPUT_BYTES",
		"maxOutputBytes":             "MAX_OUTPUT_BYTES",
		"MAX_SCRIPT_SIZE_BYTES":      "",
		"REQUEST_TIMEOUT_SECONDS":    "REQUEST_TIMEOUT",
		"TIMEOUT_REQUEST":            "REQUEST_TIMEOUT",
		"SHUTDOWN_TIMEOUT_S":         "SHUTDOWN_TIMEOUT",
		"HARD_KILL_GRACE_MS":         "HARD_KILL_GRACE",
		"CONFIRM_AFTER_SCRIPT":       "SCRIPT_CONFIRM_AFTER",
		"EVALUATIONS_CONCURRENT_MAX": "MAX_CONCURRENT_EVALUATIONS",
		"LEVEL_LOG":                  "LOG_LEVEL",
		"port":                       "PORT",
		"MAX_CONCURENT_EVALUATIONS":  "MAX_CONCURRENT_EVALUATIONS", // a letter missing
		"LOGLEVEL":                   "LOG_LEVEL",                  // the underscore
		"DEFAULT_WALLCLOCK":          "DEFAULT_WALL_CLOCK",
		"PORTS":                      "PORT", // one edit from a short name
	} {
		got := Lookalikes([]string{name + "=1"})
		switch {
		case known == "" && len(got) != 0:
			t.Errorf("%s: %v, want no warning", name, got)
		case known != "" && (len(got) != 1 || got[0].Name != name || got[0].Known != known):
			t.Errorf("%s: %v, want it taken for %s", name, got, known)
		}
	}
	got := Lookalikes([]string{"MAX_WALL_CLOCK_MS=1000", "MAX_WALL_CLOCK=1s", "MAX_MEMORY=1", "LOGLEVEL=debug", "AUTH_CALLERS_ALLOWED=x", "BULK_INPUT=gs://b/in/"})
	want := []string{
		"the environment variable MAX_WALL_CLOCK_MS is not a setting of this service and is ignored: did you mean MAX_WALL_CLOCK, a duration with a unit (ms, s, m, h), such as 30s?",
		"the environment variable MAX_MEMORY is not a setting of this service and is ignored: did you mean MAX_MEMORY_BYTES, a whole number of bytes, such as 268435456?",
		"the environment variable LOGLEVEL is not a setting of this service and is ignored: did you mean LOG_LEVEL, a value such as info?",
		"the environment variable AUTH_CALLERS_ALLOWED is not a setting of this service and is ignored: did you mean AUTH_ALLOWED_CALLERS, a comma-separated list?",
		// any text without a default: its form says nothing, and is not said
		"the environment variable BULK_INPUT is not a setting of this service and is ignored: did you mean BULK_INPUTS?",
	}
	if len(got) != len(want) {
		t.Fatalf("got %v\nwant %q", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("got  %s\nwant %s", got[i], want[i])
		}
	}
}

// No variable that the platform, the OS, a shell, Go, OpenTelemetry or a
// CI sets is taken for a setting, whatever its value: a warning every
// instance logs at start-up for a variable nobody misspelt would teach
// operators to ignore the one that matters.
func TestLookalikesLeaveOtherProgramsVariables(t *testing.T) {
	env := []string{
		"PATH=/usr/bin", "HOME=/root", "HOSTNAME=h", "HOST=example", "SORTED=1", "TERM=xterm", "LANG=C.UTF-8",
		"LC_ALL=C", "TZ=UTC", "TMPDIR=/tmp", "USER=u", "LOGNAME=u", "SHELL=/bin/sh", "PWD=/", "OLDPWD=/",
		"SHLVL=1", "EDITOR=vi", "PAGER=less", "MAIL=/var/mail/u", "DISPLAY=:0", "SSH_AUTH_SOCK=/s",
		"XDG_RUNTIME_DIR=/run/user/0", "COLORTERM=truecolor", "DEBIAN_FRONTEND=noninteractive",
		"HTTP_PROXY=x", "HTTPS_PROXY=x", "NO_PROXY=x", "SSL_CERT_FILE=/c", "SSL_CERT_DIR=/c",
		"K_SERVICE=s", "K_REVISION=r", "K_CONFIGURATION=c", "CLOUD_RUN_JOB=j", "CLOUD_RUN_EXECUTION=e",
		"CLOUD_RUN_TASK_INDEX=0", "CLOUD_RUN_TASK_COUNT=1", "CLOUD_RUN_TASK_ATTEMPT=0",
		"GOOGLE_CLOUD_REGION=r", "GOOGLE_CLOUD_QUOTA_PROJECT=p", "GOOGLE_APPLICATION_CREDENTIALS=/k.json",
		"GCLOUD_PROJECT=p", "GCP_PROJECT=p", "CLOUDSDK_CORE_PROJECT=p", "FUNCTION_TARGET=f",
		"STORAGE_EMULATOR_HOST=localhost:1", "PUBSUB_EMULATOR_HOST=localhost:2",
		"KUBERNETES_SERVICE_HOST=10.0.0.1", "KUBERNETES_SERVICE_PORT=443", "KUBERNETES_PORT=tcp://x",
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://x", "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_EXPORTER_OTLP_TIMEOUT=10000", "OTEL_EXPORTER_OTLP_HEADERS=a=b", "OTEL_SERVICE_NAME=s",
		"OTEL_RESOURCE_ATTRIBUTES=a=b", "OTEL_TRACES_EXPORTER=otlp", "OTEL_METRICS_EXPORTER=otlp",
		"OTEL_LOGS_EXPORTER=otlp", "OTEL_LOG_LEVEL=info", "OTEL_TRACES_SAMPLER=always_on", "OTEL_SDK_DISABLED=false",
		"GOMAXPROCS=2", "GOMEMLIMIT=1GiB", "GOGC=100", "GODEBUG=x", "GOTRACEBACK=all", "GOFLAGS=-mod=mod",
		"GOPATH=/go", "GOROOT=/usr/local/go", "GOCACHE=/c", "GOPROXY=off", "CGO_ENABLED=0", "GOTOOLCHAIN=local",
		"CI=true", "GITHUB_ACTIONS=true", "RUNNER_TEMP=/t", "BUILD_ID=1", "PROJECT_ID=p",
		"NODE_ENV=production", "JAVA_HOME=/j", "POD_NAME=p", "SERVER_PORT=1", "LOG_FORMAT=json",
		"NO_VALUE", "=x",
	}
	if got := Lookalikes(env); len(got) != 0 {
		t.Errorf("other programs' variables taken for settings: %v", got)
	}
}

// Each setting has words of its own: a name with a setting's words is never
// two settings' spelling.
func TestSettingsHaveWordsOfTheirOwn(t *testing.T) {
	seen := map[string]string{}
	for _, name := range Variables() {
		w := sameWords(name)
		if other, dup := seen[w]; dup || w == "" {
			t.Errorf("%s and %s have the same words %q", name, other, w)
		}
		seen[w] = name
	}
}

// A default memory limit below the engine's minimum is a start-up problem:
// every request that takes the default would fail.
func TestDefaultMemoryBelowTheEngineMinimum(t *testing.T) {
	env := map[string]string{"STORE_URL": "none", "DEFAULT_MEMORY_BYTES": "4096"}
	_, err := LoadConfig(fromMap(env))
	if err == nil || !strings.Contains(err.Error(), "DEFAULT_MEMORY_BYTES must be at least 262144") {
		t.Errorf("DEFAULT_MEMORY_BYTES=4096: %v", err)
	}
	env["DEFAULT_MEMORY_BYTES"] = "262144"
	if _, err := LoadConfig(fromMap(env)); err != nil {
		t.Errorf("DEFAULT_MEMORY_BYTES at the minimum: %v", err)
	}
}

// A store URL's refusal gives one hint: the accepted forms where the URL is
// of none of them, the part at fault where it is of one; never both, and no
// package name.
func TestStoreURLRefusalsHintOnce(t *testing.T) {
	for url, want := range map[string]string{
		"ftp://x": `STORE_URL "ftp://x": unsupported scheme "ftp" (want gs://bucket/prefix, file:///path, a directory path, mem:, or none)`,
		"gs:/x":   `STORE_URL "gs:/x": a gs URL is written gs://bucket or gs://bucket/prefix, with two slashes`,
		"gs://":   `STORE_URL "gs://": missing bucket name`,
	} {
		_, err := LoadConfig(fromMap(map[string]string{"STORE_URL": url}))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Count(err.Error(), "(want") > 1 || strings.Contains(err.Error(), "contentstore:") {
			t.Errorf("STORE_URL=%s: %v, want %q", url, err, want)
		}
	}
}

// SCRIPT_CONFIRM_AFTER is a duration of 0 or more, the cache's own default
// when unset: 0 (which Go reads without a unit) confirms before every run;
// a number without a unit and a negative duration are refused alone, in
// the setting's words.
func TestConfigScriptConfirmAfter(t *testing.T) {
	if d := Defaults().ScriptConfirmAfter; d != contentstore.DefaultConfirmAfter || d <= 0 {
		t.Errorf("the default is %v, want the cache's %v", d, contentstore.DefaultConfirmAfter)
	}
	for value, want := range map[string]time.Duration{"0": 0, "0s": 0, "250ms": 250 * time.Millisecond, "2m": 2 * time.Minute} {
		c, err := LoadConfig(fromMap(map[string]string{"STORE_URL": "none", "SCRIPT_CONFIRM_AFTER": value}))
		if err != nil || c.ScriptConfirmAfter != want {
			t.Errorf("SCRIPT_CONFIRM_AFTER=%s: %v, %v; want %v", value, c.ScriptConfirmAfter, err, want)
		}
	}
	for value, want := range map[string]string{
		"-1s":  `SCRIPT_CONFIRM_AFTER must be >= 0 (0 confirms before every run from the cache), got -1s`,
		"30":   `SCRIPT_CONFIRM_AFTER must be a duration with a unit (ms, s, m, h), such as 30s; a number alone has no unit, got "30"`,
		"soon": `SCRIPT_CONFIRM_AFTER must be a duration with a unit (ms, s, m, h), such as 30s, got "soon"`,
	} {
		_, err := LoadConfig(fromMap(map[string]string{"STORE_URL": "none", "SCRIPT_CONFIRM_AFTER": value}))
		if want = "configuration:\n" + want; err == nil || err.Error() != want {
			t.Errorf("SCRIPT_CONFIRM_AFTER=%s:\n%v\nwant\n%s", value, err, want)
		}
	}
}
