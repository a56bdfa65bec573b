package deploy

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// A Dockerfile reader for the checks: instructions with their continuation
// lines joined and comment lines dropped, grouped into stages.

type dfInstr struct {
	cmd  string // upper case: FROM, RUN, COPY, ...
	args string
	line int
}

type dfStage struct {
	from   string // the image, as written
	name   string // AS name, or ""
	line   int
	instrs []dfInstr
}

func (s *dfStage) all(cmd string) []dfInstr {
	var out []dfInstr
	for _, in := range s.instrs {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

func parseDockerfile(src string) (global []dfInstr, stages []*dfStage, err error) {
	lines := strings.Split(src, "\n")
	var cur strings.Builder
	start := 0
	flush := func() error {
		text := strings.TrimSpace(cur.String())
		cur.Reset()
		if text == "" {
			return nil
		}
		cmd, args, _ := strings.Cut(text, " ")
		in := dfInstr{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args), line: start}
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			var from, name string
			for i := 0; i < len(f); i++ {
				switch {
				case strings.HasPrefix(f[i], "--"):
				case from == "":
					from = f[i]
				case strings.EqualFold(f[i], "AS") && i+1 < len(f):
					name = f[i+1]
					i++
				}
			}
			if from == "" {
				return fmt.Errorf("line %d: FROM without an image", start)
			}
			stages = append(stages, &dfStage{from: from, name: name, line: start})
			return nil
		}
		if len(stages) == 0 {
			if in.cmd != "ARG" {
				return fmt.Errorf("line %d: %s before the first FROM", start, in.cmd)
			}
			global = append(global, in)
			return nil
		}
		s := stages[len(stages)-1]
		s.instrs = append(s.instrs, in)
		return nil
	}
	continuing := false
	for i, l := range lines {
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "#") {
			continue // a comment, also inside a continuation
		}
		if !continuing {
			if trimmed == "" {
				continue
			}
			start = i + 1
		}
		if strings.HasSuffix(l, "\\") {
			cur.WriteString(strings.TrimSuffix(l, "\\"))
			cur.WriteByte(' ')
			continuing = true
			continue
		}
		cur.WriteString(l)
		continuing = false
		if err := flush(); err != nil {
			return nil, nil, err
		}
	}
	if continuing {
		return nil, nil, fmt.Errorf("the last instruction ends with a line continuation")
	}
	return global, stages, nil
}

// envPairs parses ENV KEY=VALUE ... (and the legacy ENV KEY VALUE).
func envPairs(args string) map[string]string {
	out := map[string]string{}
	f := strings.Fields(args)
	if len(f) >= 2 && !strings.Contains(f[0], "=") {
		out[f[0]] = strings.Join(f[1:], " ")
		return out
	}
	for _, kv := range f {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			out[k] = strings.Trim(v, `"'`)
		}
	}
	return out
}

// checkDockerfile runs the hardening checks on the Dockerfile.
func checkDockerfile(src string) findings {
	var fs findings
	global, stages, err := parseDockerfile(src)
	if err != nil {
		fs.add("docker.parse", "Dockerfile", "%v", err)
		return fs
	}
	if len(stages) < 2 {
		fs.add("docker.multistage", "Dockerfile", "want a multi-stage build (a build stage and a minimal final stage), found %d stage(s)", len(stages))
		if len(stages) == 0 {
			return fs
		}
	}
	final := stages[len(stages)-1]
	fw := fmt.Sprintf("Dockerfile:%d final stage", final.line)

	// Non-root: the last USER of the final stage names neither root nor uid 0.
	users := final.all("USER")
	if len(users) == 0 {
		fs.add("docker.user", fw, "no USER in the final stage: the container would run as root")
	} else {
		u := strings.TrimSpace(users[len(users)-1].args)
		user, group, _ := strings.Cut(u, ":")
		root := func(s string) bool { return s == "" || s == "root" || strings.Trim(s, "0") == "" }
		if root(user) || group != "" && root(group) {
			fs.add("docker.user", fmt.Sprintf("Dockerfile:%d", users[len(users)-1].line), "the final stage runs as %q: want a non-root user and group, such as 65532:65532", u)
		}
	}

	// Minimal base: scratch (with CA certificates) or distroless.
	base := final.from
	switch {
	case base == "scratch":
		if !slices.ContainsFunc(final.all("COPY"), func(in dfInstr) bool { return strings.Contains(in.args, "ca-certificates") }) {
			fs.add("docker.base", fw, "a scratch image needs the CA certificates copied in")
		}
	case strings.Contains(base, "distroless"):
	default:
		fs.add("docker.base", fw, "the final stage is %s: want scratch or a distroless image", base)
	}
	if len(final.all("RUN")) > 0 {
		fs.add("docker.base", fw, "the final stage runs commands: it should only copy files in")
	}
	if len(final.all("ENTRYPOINT")) == 0 {
		fs.add("docker.entrypoint", fw, "no ENTRYPOINT in the final stage")
	}

	// The compilation cache: compiled in a build stage, copied in, named by
	// COMPILATION_CACHE_DIR.
	cacheDir := ""
	for _, in := range final.all("ENV") {
		if v, ok := envPairs(in.args)["COMPILATION_CACHE_DIR"]; ok {
			cacheDir = v
		}
	}
	if cacheDir == "" {
		fs.add("docker.cache_env", fw, "the final stage does not set COMPILATION_CACHE_DIR")
	} else if !slices.ContainsFunc(final.all("COPY"), func(in dfInstr) bool {
		f := strings.Fields(in.args)
		return strings.Contains(in.args, "--from=") && len(f) > 0 && strings.TrimSuffix(f[len(f)-1], "/") == strings.TrimSuffix(cacheDir, "/")
	}) {
		fs.add("docker.cache_env", fw, "COMPILATION_CACHE_DIR=%s, but nothing is copied there from a build stage", cacheDir)
	}

	var static, compile, smoke bool
	for _, s := range stages[:len(stages)-1] {
		for _, in := range s.all("RUN") {
			if strings.Contains(in.args, "CGO_ENABLED=0") && strings.Contains(in.args, "-trimpath") &&
				strings.Contains(in.args, "-X main.version=") && strings.Contains(in.args, "go build") {
				static = true
			}
			if strings.Contains(in.args, "compile-cache") {
				compile = true
			}
			if strings.Contains(in.args, "image-smoke") {
				smoke = true
			}
		}
	}
	if !static {
		fs.add("docker.static", "Dockerfile", "no build stage runs CGO_ENABLED=0 go build -trimpath -ldflags \"-X main.version=…\"")
	}
	if !compile {
		fs.add("docker.compile_cache", "Dockerfile", "no build stage runs the binary's compile-cache subcommand")
	}
	if !smoke {
		fs.add("docker.smoke", "Dockerfile", "no build stage runs deploy/image-smoke.sh on the binary")
	}

	// The optional rebuild of the engine: a URL and a sha256, verified.
	var args []string
	for _, in := range global {
		args = append(args, strings.Fields(in.args)...)
	}
	for _, s := range stages {
		for _, in := range s.all("ARG") {
			args = append(args, strings.Fields(in.args)...)
		}
	}
	has := func(name string) bool {
		return slices.ContainsFunc(args, func(a string) bool { return a == name || strings.HasPrefix(a, name+"=") })
	}
	if !has("QUICKJS_TARBALL_URL") || !has("QUICKJS_SHA256") || !strings.Contains(src, "sha256sum -c") {
		fs.add("docker.rebuild", "Dockerfile", "the optional engine rebuild needs build arguments QUICKJS_TARBALL_URL and QUICKJS_SHA256 and a sha256sum -c of the tarball")
	}
	return fs
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDockerfile: the final stage is minimal and non-root, with the baked
// compilation cache named by COMPILATION_CACHE_DIR.
func TestDockerfile(t *testing.T) {
	if fs := checkDockerfile(readFile(t, "../Dockerfile")); len(fs) > 0 {
		t.Errorf("Dockerfile:%s", fs)
	}
}

// TestDockerfileChecksBite: each check fails on a weakened copy.
func TestDockerfileChecksBite(t *testing.T) {
	src := readFile(t, "../Dockerfile")
	type edit struct{ old, new string }
	cases := []struct {
		name  string
		edits []edit
		want  string
	}{
		{"no USER", []edit{{"USER 65532:65532\n", ""}}, "docker.user"},
		{"USER root", []edit{{"USER 65532:65532", "USER root"}}, "docker.user"},
		{"USER 0", []edit{{"USER 65532:65532", "USER 0"}}, "docker.user"},
		{"root group", []edit{{"USER 65532:65532", "USER 65532:0"}}, "docker.user"},
		{"USER only in a build stage", []edit{{"USER 65532:65532\n", ""}, {"WORKDIR /src\nCOPY go.mod", "WORKDIR /src\nUSER 65532:65532\nCOPY go.mod"}}, "docker.user"},
		{"root after non-root", []edit{{"ENTRYPOINT [", "USER root\nENTRYPOINT ["}}, "docker.user"},
		{"final stage merged into the build stage", []edit{{"FROM scratch\n", ""}}, "docker.base"},
		{"full base image", []edit{{"FROM scratch", "FROM debian:bookworm"}}, "docker.base"},
		{"no CA certificates", []edit{{"COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt\n", ""}}, "docker.base"},
		{"no cache dir", []edit{{"ENV COMPILATION_CACHE_DIR=/var/cache/sandbox-cloudrun/wazero \\\n", "ENV \\\n"}}, "docker.cache_env"},
		{"cache not copied", []edit{{"COPY --from=build /out/wazero-cache /var/cache/sandbox-cloudrun/wazero\n", ""}}, "docker.cache_env"},
		{"cgo", []edit{{"CGO_ENABLED=0 go build", "go build"}}, "docker.static"},
		{"no compile-cache", []edit{{"RUN /sandbox-cloudrun compile-cache /out/wazero-cache", "RUN mkdir -p /out/wazero-cache"}}, "docker.compile_cache"},
		{"no smoke test", []edit{{"RUN sh /usr/local/bin/image-smoke", "RUN echo"}}, "docker.smoke"},
		{"unverified rebuild", []edit{{"sha256sum -c", "cat"}}, "docker.rebuild"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			weak := src
			for _, e := range tc.edits {
				if !strings.Contains(weak, e.old) {
					t.Fatalf("the Dockerfile does not contain %q: the weakening no longer applies, update the test", e.old)
				}
				weak = strings.Replace(weak, e.old, e.new, 1)
			}
			fs := checkDockerfile(weak)
			t.Logf("findings:%s", fs)
			if !fs.has(tc.want) {
				t.Errorf("weakened Dockerfile passes check %s; findings:%s", tc.want, fs)
			}
		})
	}
}

// TestDockerfileParser: continuations, comments inside them, stages.
func TestDockerfileParser(t *testing.T) {
	global, stages, err := parseDockerfile("ARG V=1\n# c\nFROM a:${V} AS one\nRUN x \\\n  # inside\n  y\n\nFROM scratch\nENV A=1 \\\n    B=\"two\"\nUSER 1:1\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(global) != 1 || len(stages) != 2 || stages[0].name != "one" || stages[1].from != "scratch" {
		t.Fatalf("global %v, stages %+v", global, stages)
	}
	if r := stages[0].all("RUN"); len(r) != 1 || strings.Join(strings.Fields(r[0].args), " ") != "x y" || r[0].line != 4 {
		t.Errorf("RUN = %+v", r)
	}
	if e := envPairs(stages[1].all("ENV")[0].args); e["A"] != "1" || e["B"] != "two" {
		t.Errorf("ENV = %v", e)
	}
	if _, _, err := parseDockerfile("RUN x\nFROM scratch\n"); err == nil {
		t.Error("RUN before FROM was accepted")
	}
}
