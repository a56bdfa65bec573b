package deploy

// The rollout of cloudbuild.yaml, run: the shell scripts of its gcloud steps,
// taken from the parsed file and substituted as Cloud Build substitutes them,
// run in order with bash, stopping at the first that fails, as Cloud Build
// does. gcloud is a stub on the PATH that records each call and answers the
// few the steps make; the conformance kit is the real binary (the one the
// Dockerfile ships, which the kit-binary step copies out of the image), run
// against the real service on loopback. Between the two stands a stand-in
// for the candidate's tagged URL, which, as Cloud Run does, refuses a request
// without an ID token for its own URL; for a broken candidate it answers
// every evaluation wrongly.
//
// What the stub cannot show (that gcloud prints the traffic targets as the
// stub does, that Cloud Run accepts the token, that the build reaches the
// URL) only a real project can: docs/deploy.md, "What only a real project
// shows".

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	servicetest.Cleanup()
	os.Exit(code)
}

// cbSubstitute does to a step's arguments what Cloud Build does before it
// runs them: $$ becomes $, and $NAME and ${NAME} the substitution's value.
func cbSubstitute(text string, subs map[string]string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		if text[i] != '$' {
			b.WriteByte(text[i])
			continue
		}
		if i+1 < len(text) && text[i+1] == '$' {
			b.WriteByte('$')
			i++
			continue
		}
		m := cbRef.FindStringSubmatch(text[i:])
		if m == nil {
			b.WriteByte('$')
			continue
		}
		v, ok := subs[m[2]+m[3]]
		if !ok {
			return "", fmt.Errorf("$%s has no value", m[2]+m[3])
		}
		b.WriteString(v)
		i += len(m[0]) - 1
	}
	return b.String(), nil
}

func TestCBSubstitute(t *testing.T) {
	got, err := cbSubstitute(`a $A ${_B}x $$C $${D} awk '{print $$1}'`, map[string]string{"A": "1", "_B": "2"})
	if want := `a 1 2x $C ${D} awk '{print $1}'`; err != nil || got != want {
		t.Errorf("cbSubstitute = %q, %v; want %q", got, err, want)
	}
	if _, err := cbSubstitute(`$UNSET`, nil); err == nil {
		t.Error("cbSubstitute of an unset substitution: no error")
	}
}

// stubGcloud is gcloud as the rollout's steps call it: it appends each call
// to $STUB_LOG and answers the calls the steps make. `run services describe`
// answers only the projection the deploy step asks for, with the traffic
// targets of a service that serves $STUB_SERVING and holds, under the tag
// the deploy call gave it, $STUB_CANDIDATE at $STUB_URL. Its ID token names
// its audience, with ":" as "_" (the characters a token may hold). The bulk
// job $STUB_JOB_NAME exists with $STUB_JOB=exists, and `run jobs update`
// moves it; with denied the caller may not update it; any other job does not
// exist.
const stubGcloud = `#!/usr/bin/env bash
set -u
echo "gcloud $*" >> "$STUB_LOG"
case "$1 $2" in
"run deploy")
  prev=
  for a in "$@"; do
    if [ "$prev" = --tag ]; then printf '%s\n' "$a" > "$STUB_STATE/tag"; fi
    case "$a" in --tag=*) printf '%s\n' "${a#--tag=}" > "$STUB_STATE/tag";; esac
    prev=$a
  done
  exit 0;;
"run services")
  case "$3" in
  describe)
    flat= format=
    for a in "$@"; do
      case "$a" in
      '--flatten=status.traffic[]') flat=1;;
      '--format=value(status.traffic.tag,status.traffic.revisionName,status.traffic.url)') format=1;;
      esac
    done
    if [ -z "$flat" ] || [ -z "$format" ]; then
      echo "stub gcloud: describe answers only --flatten=status.traffic[] --format=value(status.traffic.tag,status.traffic.revisionName,status.traffic.url)" >&2
      exit 2
    fi
    printf '\t%s\t\n' "$STUB_SERVING"
    if [ -f "$STUB_STATE/tag" ]; then printf '%s\t%s\t%s\n' "$(cat "$STUB_STATE/tag")" "$STUB_CANDIDATE" "$STUB_URL"; fi
    exit 0;;
  update-traffic) exit 0;;
  esac;;
"run jobs")
  case "$3" in
  update)
    if [ "$4" = "$STUB_JOB_NAME" ] && [ "$STUB_JOB" = exists ]; then exit 0; fi
    if [ "$4" = "$STUB_JOB_NAME" ] && [ "$STUB_JOB" = denied ]; then
      echo "ERROR: (gcloud.run.jobs.update) PERMISSION_DENIED: Permission 'run.jobs.update' denied on resource 'namespaces/my-project/jobs/$4'." >&2
      exit 1
    fi
    echo "ERROR: (gcloud.run.jobs.update) Job [$4] could not be found." >&2
    exit 1;;
  esac;;
"auth print-identity-token")
  for a in "$@"; do
    case "$a" in --audiences=*) aud=${a#--audiences=}; echo "stub-token-for-${aud//:/_}"; exit 0;; esac
  done
  echo "stub gcloud: print-identity-token without --audiences" >&2
  exit 2;;
esac
echo "stub gcloud: no answer for: gcloud $*" >&2
exit 2
`

const (
	stubServing   = "sandbox-cloudrun-00001-old"
	stubCandidate = "sandbox-cloudrun-00002-new"
	rolloutCommit = "0123abc4567def0123abc4567def0123abc4567d"
	rolloutTag    = "candidate-0123abc"
	rolloutImage  = "europe-west1-docker.pkg.dev/my-project/sandbox/sandbox-cloudrun:" + rolloutCommit
	stubJob       = "sandbox-cloudrun-bulk"
)

// callLog is the run's calls in order: gcloud's, and the kit's requests as
// the candidate saw them ("kit GET /v1/capabilities 200").
type callLog struct {
	mu   sync.Mutex
	path string
}

func (l *callLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.OpenFile(l.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}

func (l *callLog) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, err := os.ReadFile(l.path)
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// candidateURL stands for the candidate revision's tagged URL: like Cloud
// Run, it refuses a request without an ID token for its own URL (401), and
// passes the others to the service; wrong answers every evaluation with 42,
// as a revision that serves wrong answers would.
func candidateURL(t *testing.T, service string, log *callLog, wrong bool) string {
	t.Helper()
	target, err := url.Parse(service)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var self string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer stub-token-for-"+strings.ReplaceAll(self, ":", "_") {
			log.add(fmt.Sprintf("kit %s %s 401 (Authorization %q)", r.Method, r.URL.Path, r.Header.Get("Authorization")))
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"type":"about:blank","title":"Unauthorized","status":401}`)
			return
		}
		log.add(fmt.Sprintf("kit %s %s", r.Method, r.URL.Path))
		if wrong && r.Method == http.MethodPost && r.URL.Path == "/v1/sandbox/evaluate" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"ok":true,"value":42}`)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	self = srv.URL
	return srv.URL
}

// rolloutRun is what one run of the rollout's steps did.
type rolloutRun struct {
	url    string   // the candidate's tagged URL
	steps  []string // the ids of the steps run, in order
	failed string   // the id of the step that failed, "" if none did
	err    error    // how it failed
	output string   // what the steps printed, stdout and stderr together
	calls  []string
}

// runRollout runs the gcloud steps of the cloudbuild.yaml src, in order, in
// a workspace holding the service's binary where the kit-binary step puts
// the image's, until one fails. job is the stub's $STUB_JOB: whether the
// bulk job exists (exists, missing or denied).
func runRollout(t *testing.T, src string, overrides map[string]string, job, candidate string, log *callLog) rolloutRun {
	t.Helper()
	cb, err := parseCloudBuild(src)
	if err != nil {
		t.Fatal(err)
	}
	subs := map[string]string{"PROJECT_ID": "my-project", "COMMIT_SHA": rolloutCommit, "_REGISTRY": "europe-west1-docker.pkg.dev"}
	for k, v := range cb.subs {
		if _, set := subs[k]; !set {
			subs[k] = v
		}
	}
	for k, v := range overrides {
		subs[k] = v
	}

	if n := len(slices.DeleteFunc(slices.Clone(cb.steps), func(s cbStep) bool { return s.name != "google/cloud-sdk:slim" })); n < 3 {
		t.Fatalf("cloudbuild.yaml has %d gcloud steps: want deploy, conformance and traffic", n)
	}
	dir := t.TempDir()
	work, stub, state := filepath.Join(dir, "workspace"), filepath.Join(dir, "bin"), filepath.Join(dir, "state")
	for _, d := range []string{work, stub, state} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(stub, "gcloud"), []byte(stubGcloud), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(servicetest.Binary(t), filepath.Join(work, "sandbox-cloudrun")); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+stub+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+dir,
		"STUB_LOG="+log.path, "STUB_STATE="+state, "STUB_URL="+candidate,
		"STUB_SERVING="+stubServing, "STUB_CANDIDATE="+stubCandidate,
		"STUB_JOB="+job, "STUB_JOB_NAME="+stubJob)

	r := rolloutRun{url: candidate}
	var out strings.Builder
	for _, s := range cb.steps {
		if s.name != "google/cloud-sdk:slim" {
			continue
		}
		args := make([]string, len(s.args))
		for i, a := range s.args {
			if args[i], err = cbSubstitute(a, subs); err != nil {
				t.Fatalf("step %s: %v", s.id, err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		cmd := exec.CommandContext(ctx, s.entrypoint, args...)
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = work, env, &out, &out
		fmt.Fprintf(&out, "--- step %s\n", s.id)
		r.steps = append(r.steps, s.id)
		err := cmd.Run()
		cancel()
		if err != nil {
			r.failed, r.err = s.id, err
			break
		}
	}
	r.output, r.calls = out.String(), log.lines()
	return r
}

// index is the position of the first call that contains every one of
// parts, or -1.
func (r rolloutRun) index(parts ...string) int {
	return slices.IndexFunc(r.calls, func(c string) bool {
		for _, p := range parts {
			if !strings.Contains(c, p) {
				return false
			}
		}
		return true
	})
}

// lastKit is the position of the kit's last request, or -1.
func (r rolloutRun) lastKit() int {
	last := -1
	for i, c := range r.calls {
		if strings.HasPrefix(c, "kit ") {
			last = i
		}
	}
	return last
}

// passed lists how a run of a candidate that passes the kit went wrong:
// it must be deployed with no traffic under its tag, checked with a token
// for its URL, and then, by name, take the traffic.
func (r rolloutRun) passed() []string {
	var p []string
	if r.err != nil {
		p = append(p, fmt.Sprintf("step %s failed: %v", r.failed, r.err))
	}
	deploy := r.index("gcloud run deploy ")
	if deploy != 0 {
		p = append(p, "the first call is not gcloud run deploy")
	} else {
		for _, want := range []string{"--no-traffic", "--tag " + rolloutTag, "--region europe-west1",
			"--image " + rolloutImage} {
			if !strings.Contains(r.calls[deploy], want) {
				p = append(p, "gcloud run deploy lacks "+want)
			}
		}
	}
	token := r.index("gcloud auth print-identity-token", "--audiences="+r.url)
	kit := r.lastKit()
	traffic := r.index("gcloud run services update-traffic ")
	switch {
	case token < 0:
		p = append(p, "no ID token was asked for the candidate's URL "+r.url)
	case kit < 0:
		p = append(p, "the kit sent the candidate no request")
	case traffic < 0:
		p = append(p, "no traffic was routed")
	case !(deploy < token && token < kit && kit < traffic):
		p = append(p, "want deploy, the token, the kit, then the traffic")
	}
	if r.index("kit ", " 401 ") >= 0 {
		p = append(p, "the candidate refused a request of the kit (no ID token for its URL)")
	}
	if traffic >= 0 {
		if c := r.calls[traffic]; !strings.Contains(c, "--to-revisions "+stubCandidate+"=100") || !strings.Contains(c, "--remove-tags "+rolloutTag) {
			p = append(p, "the traffic did not go to the checked revision "+stubCandidate+" by name, its tag removed: "+c)
		}
	}
	if n := strings.Count(strings.Join(r.calls, "\n"), "update-traffic"); n > 1 {
		p = append(p, fmt.Sprintf("the traffic was routed %d times", n))
	}
	if !strings.Contains(r.output, "conformance: PASS") {
		p = append(p, "the kit's report is not in the output")
	}
	return p
}

// refused lists how a run of a candidate that fails the kit went wrong: the
// kit must have run against it, the build must fail at the kit's step with
// the kit's report in its output, and no traffic may move.
func (r rolloutRun) refused(kitStep string) []string {
	var p []string
	if r.err == nil {
		p = append(p, "every step passed")
	} else if r.failed != kitStep {
		p = append(p, fmt.Sprintf("step %s failed (%v), not the kit's step %s", r.failed, r.err, kitStep))
	}
	if r.lastKit() < 0 {
		p = append(p, "the kit sent the candidate no request")
	}
	if d := r.index("gcloud run deploy "); d < 0 || !strings.Contains(r.calls[d], " --no-traffic") {
		p = append(p, "the candidate was not deployed with --no-traffic: it served before the kit ran")
	}
	if r.index("update-traffic") >= 0 {
		p = append(p, "traffic was routed though the kit failed: "+r.calls[r.index("update-traffic")])
	}
	for _, want := range []string{"FAIL echo", "conformance: FAIL", "takes no traffic"} {
		if !strings.Contains(r.output, want) {
			p = append(p, fmt.Sprintf("the output lacks %q", want))
		}
	}
	return p
}

// jobMoved lists how the move of the bulk job went wrong in a run whose
// candidate took the traffic: the job _BULK_JOB names must have been moved
// once, to the candidate's image, in the service's region, after the
// traffic (only an image that passed the kit may run in it).
func (r rolloutRun) jobMoved() []string {
	var p []string
	update := r.index("gcloud run jobs update ")
	traffic := r.index("gcloud run services update-traffic ")
	switch {
	case update < 0:
		p = append(p, "the bulk job "+stubJob+" was not moved to the new image")
	case traffic < 0 || update < traffic:
		p = append(p, "the bulk job was moved before the traffic: it would run an image that has not passed the kit")
	default:
		for _, want := range []string{"gcloud run jobs update " + stubJob + " ", "--image " + rolloutImage, "--region europe-west1"} {
			if !strings.Contains(r.calls[update], want) {
				p = append(p, "gcloud run jobs update lacks "+want+": "+r.calls[update])
			}
		}
	}
	if n := strings.Count(strings.Join(r.calls, "\n"), "gcloud run jobs update "); n > 1 {
		p = append(p, fmt.Sprintf("the bulk job was moved %d times", n))
	}
	return p
}

// jobUntouched lists the bulk job's moves in a run that must make none.
func (r rolloutRun) jobUntouched(why string) []string {
	if i := r.index("gcloud run jobs update "); i >= 0 {
		return []string{"the bulk job was moved " + why + ": " + r.calls[i]}
	}
	return nil
}

// jobRefused lists how a run whose move of the job fails went wrong: the
// candidate passed and took the traffic, and then the build must fail at
// jobStep with gcloud's message in its output.
func (r rolloutRun) jobRefused(jobStep string) []string {
	var p []string
	switch {
	case r.err == nil:
		p = append(p, "every step passed though the job could not be moved")
	case jobStep == "" || r.failed != jobStep:
		p = append(p, fmt.Sprintf("step %s failed (%v), not the job's step %q", r.failed, r.err, jobStep))
	}
	if r.index("gcloud run services update-traffic ") < 0 || !strings.Contains(r.output, "conformance: PASS") {
		p = append(p, "the candidate did not pass the kit and take the traffic before the job step")
	}
	if !strings.Contains(r.output, "PERMISSION_DENIED") || !strings.Contains(r.output, "could not move the job "+stubJob) {
		p = append(p, "the output lacks update's error (PERMISSION_DENIED) and what it means")
	}
	return p
}

// skipped lists how a run with _DEPLOY=false went wrong: nothing may be
// called at all.
func (r rolloutRun) skipped() []string {
	var p []string
	if r.err != nil {
		p = append(p, fmt.Sprintf("step %s failed: %v", r.failed, r.err))
	}
	if len(r.calls) > 0 && r.calls[0] != "" {
		p = append(p, fmt.Sprintf("calls with _DEPLOY=false: %q", r.calls))
	}
	if !strings.Contains(r.output, "_DEPLOY=false: the image is pushed, not deployed") {
		p = append(p, "the output does not say the image was only pushed")
	}
	return p
}

// kitStep is the id of the step that runs the kit.
func kitStep(t *testing.T, src string) string {
	t.Helper()
	cb, err := parseCloudBuild(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range cb.steps {
		if strings.Contains(s.command(), "conformance --url") {
			return s.id
		}
	}
	t.Fatal("no step of cloudbuild.yaml runs the kit")
	return ""
}

// jobStep is the id of the step that moves the bulk job, or "".
func jobStep(t *testing.T, src string) string {
	t.Helper()
	cb, err := parseCloudBuild(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range cb.steps {
		if strings.Contains(s.command(), "gcloud run jobs update ") {
			return s.id
		}
	}
	return ""
}

// rolloutCase runs src and returns what went wrong, for: a candidate that
// passes the kit, with the bulk job named (pass); one that fails it (fail);
// _DEPLOY=false (skip); a candidate that passes in a project without the
// job, _BULK_JOB left empty (nojob); and one that passes where the job
// cannot be moved (jobdenied).
func rolloutCase(t *testing.T, src, service, kind string) (rolloutRun, []string) {
	t.Helper()
	log := &callLog{path: filepath.Join(t.TempDir(), "calls")}
	withJob := map[string]string{"_BULK_JOB": stubJob}
	switch kind {
	case "pass":
		r := runRollout(t, src, withJob, "exists", candidateURL(t, service, log, false), log)
		return r, append(r.passed(), r.jobMoved()...)
	case "fail":
		r := runRollout(t, src, withJob, "exists", candidateURL(t, service, log, true), log)
		return r, append(r.refused(kitStep(t, src)), r.jobUntouched("though the kit failed")...)
	case "skip":
		r := runRollout(t, src, map[string]string{"_DEPLOY": "false", "_BULK_JOB": stubJob}, "exists", candidateURL(t, service, log, false), log)
		return r, r.skipped()
	case "nojob":
		r := runRollout(t, src, nil, "missing", candidateURL(t, service, log, false), log)
		return r, append(r.passed(), r.jobUntouched("though there is none")...)
	case "jobdenied":
		r := runRollout(t, src, withJob, "denied", candidateURL(t, service, log, false), log)
		return r, r.jobRefused(jobStep(t, src))
	}
	panic(kind)
}

func startRolloutService(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary and runs the conformance kit against the service")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("the steps are bash scripts")
	}
	return servicetest.Start(t, servicetest.Options{Env: []string{"STORE_URL=none"}}).URL
}

// TestRollout: a candidate that passes the kit takes the traffic, after the
// kit, and then the bulk job moves to its image; one that fails it takes
// none, the job stays, and the build fails at the kit with its report; with
// _DEPLOY=false nothing is called; without the job (_BULK_JOB empty) the
// build passes and moves none; a move that fails fails the build.
func TestRollout(t *testing.T) {
	service := startRolloutService(t)
	src := readFile(t, "../cloudbuild.yaml")
	for _, kind := range []string{"pass", "fail", "skip", "nojob", "jobdenied"} {
		t.Run(kind, func(t *testing.T) {
			r, problems := rolloutCase(t, src, service, kind)
			t.Logf("calls:\n  %s\noutput (last 3 KiB):\n%s", strings.Join(r.calls, "\n  "), servicetest.Tail(r.output, 3<<10))
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
}

// TestRolloutChecksBite: the run catches a cloudbuild.yaml weakened in each
// way that would let an unchecked revision serve, or break the first build.
func TestRolloutChecksBite(t *testing.T) {
	service := startRolloutService(t)
	src := readFile(t, "../cloudbuild.yaml")
	cases := []struct {
		name, kind string
		old, new   string
	}{
		{"the kit's failure ignored", "fail",
			"takes no traffic, and the revision that served before still does (docs/deploy.md, \\\"Rolling out\\\").\" >&2\n          exit 1\n",
			"takes no traffic, and the revision that served before still does (docs/deploy.md, \\\"Rolling out\\\").\" >&2\n"},
		{"traffic moved with the deploy", "fail", "          --no-traffic \\\n", ""},
		{"the kit without the token", "pass", " --id-token-env KIT_ID_TOKEN", ""},
		{"a token for another audience", "pass", `if [ -z "$$audience" ]; then audience=$$url; fi`, `if [ -z "$$audience" ]; then audience=https://sandbox-cloudrun.example; fi`},
		{"the candidate looked up by another tag", "pass", `-v tag="$$tag"`, `-v tag="candidate"`},
		{"traffic to the latest revision", "pass", `--to-revisions "$$revision=100"`, "--to-latest"},
		{"the job moved before the kit", "fail",
			"        echo \"candidate $$(cat candidate-revision), with no traffic, at $$(cat candidate-url)\"\n",
			"        echo \"candidate $$(cat candidate-revision), with no traffic, at $$(cat candidate-url)\"\n        gcloud run jobs update \"${_SERVICE}-bulk\" --image \"${_REGISTRY}/$PROJECT_ID/${_REPOSITORY}/${_SERVICE}:$COMMIT_SHA\" --region \"${_REGION}\" --quiet\n"},
		{"the job moved before the traffic", "pass",
			"        echo \"candidate $$(cat candidate-revision), with no traffic, at $$(cat candidate-url)\"\n",
			"        echo \"candidate $$(cat candidate-revision), with no traffic, at $$(cat candidate-url)\"\n        gcloud run jobs update \"${_SERVICE}-bulk\" --image \"${_REGISTRY}/$PROJECT_ID/${_REPOSITORY}/${_SERVICE}:$COMMIT_SHA\" --region \"${_REGION}\" --quiet\n"},
		{"the job never moved", "pass", `if ! gcloud run jobs update "$$job"`, `if ! echo gcloud run jobs update "$$job"`},
		{"the job moved to another image", "pass",
			"gcloud run jobs update \"$$job\" \\\n          --image \"${_REGISTRY}/$PROJECT_ID/${_REPOSITORY}/${_SERVICE}:$COMMIT_SHA\"",
			"gcloud run jobs update \"$$job\" \\\n          --image \"${_REGISTRY}/$PROJECT_ID/${_REPOSITORY}/${_SERVICE}:latest\""},
		{"a job guessed without _BULK_JOB", "nojob", `job="${_BULK_JOB}"`, `job="${_SERVICE}-bulk"`},
		{"an empty _BULK_JOB moves a job", "nojob", "        if [ -z \"$$job\" ]; then\n", "        if false; then\n"},
		{"a failed move ignored", "jobdenied", "(terraform/README.md, \\\"Bulk runs\\\").\" >&2\n          exit 1\n", "(terraform/README.md, \\\"Bulk runs\\\").\" >&2\n"},
		{"the job step ignores _DEPLOY", "skip", "if [ \"${_DEPLOY}\" != \"true\" ]; then exit 0; fi\n        job=", "job="},
		{"the first build deploys", "skip", "          echo \"_DEPLOY=${_DEPLOY}: the image is pushed, not deployed (docs/deploy.md: terraform apply creates the service with it).\"\n          exit 0\n",
			"          echo \"_DEPLOY=${_DEPLOY}: the image is pushed, not deployed (docs/deploy.md: terraform apply creates the service with it).\"\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(src, tc.old) {
				t.Fatalf("cloudbuild.yaml does not contain %q: the weakening no longer applies, update the test", tc.old)
			}
			r, problems := rolloutCase(t, strings.Replace(src, tc.old, tc.new, 1), service, tc.kind)
			t.Logf("problems found: %q", problems)
			if len(problems) == 0 {
				t.Errorf("the weakened rollout passes as a %s case; calls:\n  %s", tc.kind, strings.Join(r.calls, "\n  "))
			}
		})
	}
}

// TestKitBinaryIsTheImages: the binary runRollout puts in the workspace
// stands for the one the kit-binary step copies out of the image, which
// holds the service's binary at /sandbox-cloudrun, its entrypoint: so the
// kit of a rollout is the code of the revision it checks.
func TestKitBinaryIsTheImages(t *testing.T) {
	dockerfile := readFile(t, "../Dockerfile")
	final := dockerfile[strings.LastIndex(dockerfile, "\nFROM "):]
	for _, want := range []string{"COPY --from=build /sandbox-cloudrun /sandbox-cloudrun\n", `ENTRYPOINT ["/sandbox-cloudrun"]`} {
		if !strings.Contains(final, want) {
			t.Errorf("the Dockerfile's final stage lacks %q: the kit-binary step copies /sandbox-cloudrun out of the image", want)
		}
	}
	if !strings.Contains(readFile(t, "../cloudbuild.yaml"), "docker cp sandbox-kit:/sandbox-cloudrun ./sandbox-cloudrun") {
		t.Error("cloudbuild.yaml does not copy the image's /sandbox-cloudrun into the workspace")
	}
}
