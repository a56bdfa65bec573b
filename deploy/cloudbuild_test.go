package deploy

// cloudbuild.yaml is read with a reader for the subset of YAML it is written
// in (the module has no YAML library, and this package may add none): top-level
// keys at column 0; steps as "  - key: value" items with keys at four spaces;
// scalars plain, or in double quotes (JSON escapes), or '|' literal blocks; args
// as a one-line ["…", "…"] list or a block list. Anything else is an error that
// names the line, so that the checks never silently read less than the file.

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

type cbStep struct {
	id, name, entrypoint string
	args                 []string
	line                 int
}

// command is the step's command line: entrypoint and arguments.
func (s cbStep) command() string {
	parts := append([]string{}, s.args...)
	if s.entrypoint != "" {
		parts = append([]string{s.entrypoint}, parts...)
	}
	return strings.Join(parts, " ")
}

type cloudBuild struct {
	header    string // the comment lines before the first key
	steps     []cbStep
	subs      map[string]string
	subsOrder []string
	images    []string
	text      string // the file without its comment lines
	topKeys   []string
}

func indentOf(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

// scalar parses a plain or double-quoted scalar.
func scalar(v string, line int) (string, error) {
	v = strings.TrimSpace(v)
	switch {
	case strings.HasPrefix(v, `"`):
		var s string
		if err := json.Unmarshal([]byte(v), &s); err != nil {
			return "", fmt.Errorf("line %d: bad double-quoted string %s", line, v)
		}
		return s, nil
	case strings.HasPrefix(v, "'"):
		if !strings.HasSuffix(v, "'") || len(v) < 2 {
			return "", fmt.Errorf("line %d: bad single-quoted string %s", line, v)
		}
		return strings.ReplaceAll(v[1:len(v)-1], "''", "'"), nil
	case strings.HasPrefix(v, "[") || strings.HasPrefix(v, "{") || strings.HasPrefix(v, "&") || strings.HasPrefix(v, "*"):
		return "", fmt.Errorf("line %d: %s is outside the YAML subset this reader knows", line, v)
	}
	return v, nil
}

func parseCloudBuild(src string) (*cloudBuild, error) {
	cb := &cloudBuild{subs: map[string]string{}}
	lines := strings.Split(src, "\n")
	var text, header []string
	inHeader := true
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "#") {
			if inHeader {
				header = append(header, l)
			}
			continue
		}
		if t != "" {
			inHeader = false
		}
		text = append(text, l)
	}
	cb.header, cb.text = strings.Join(header, "\n"), strings.Join(text, "\n")

	// block reads the lines indented more than indent, from i, as a literal
	// block scalar.
	block := func(i, indent int) (string, int) {
		var out []string
		for ; i < len(lines); i++ {
			l := lines[i]
			if strings.TrimSpace(l) != "" && indentOf(l) <= indent {
				break
			}
			out = append(out, l)
		}
		// Strip the block's own indentation.
		min := -1
		for _, l := range out {
			if strings.TrimSpace(l) != "" && (min < 0 || indentOf(l) < min) {
				min = indentOf(l)
			}
		}
		for j, l := range out {
			if len(l) >= min && min > 0 {
				out[j] = l[min:]
			}
		}
		return strings.TrimRight(strings.Join(out, "\n"), "\n") + "\n", i
	}

	section := ""
	var step *cbStep
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		t := strings.TrimSpace(l)
		n := i + 1
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		ind := indentOf(l)
		if ind == 0 {
			k, v, ok := strings.Cut(t, ":")
			if !ok {
				return nil, fmt.Errorf("line %d: want a top-level key", n)
			}
			section = k
			cb.topKeys = append(cb.topKeys, k)
			if strings.TrimSpace(v) != "" && (k == "steps" || k == "substitutions" || k == "images") {
				return nil, fmt.Errorf("line %d: %s must be a block", n, k)
			}
			continue
		}
		switch section {
		case "substitutions":
			if ind != 2 {
				return nil, fmt.Errorf("line %d: substitutions are KEY: value at two spaces", n)
			}
			k, v, ok := strings.Cut(t, ":")
			if !ok {
				return nil, fmt.Errorf("line %d: want KEY: value", n)
			}
			s, err := scalar(v, n)
			if err != nil {
				return nil, err
			}
			if _, dup := cb.subs[k]; dup {
				return nil, fmt.Errorf("line %d: substitution %s defined twice", n, k)
			}
			cb.subs[k] = s
			cb.subsOrder = append(cb.subsOrder, k)
		case "images":
			if ind != 2 || !strings.HasPrefix(t, "- ") {
				return nil, fmt.Errorf("line %d: images are '  - name' items", n)
			}
			s, err := scalar(strings.TrimPrefix(t, "- "), n)
			if err != nil {
				return nil, err
			}
			cb.images = append(cb.images, s)
		case "steps":
			if ind == 2 && strings.HasPrefix(t, "- ") {
				cb.steps = append(cb.steps, cbStep{line: n})
				step = &cb.steps[len(cb.steps)-1]
				t = strings.TrimPrefix(t, "- ")
				ind = 4
			}
			if step == nil {
				return nil, fmt.Errorf("line %d: want a step item '  - '", n)
			}
			if ind != 4 {
				return nil, fmt.Errorf("line %d: step keys are at four spaces", n)
			}
			k, v, ok := strings.Cut(t, ":")
			if !ok {
				return nil, fmt.Errorf("line %d: want key: value", n)
			}
			v = strings.TrimSpace(v)
			switch k {
			case "id", "name", "entrypoint":
				s, err := scalar(v, n)
				if err != nil {
					return nil, err
				}
				switch k {
				case "id":
					step.id = s
				case "name":
					step.name = s
				case "entrypoint":
					step.entrypoint = s
				}
			case "args":
				if strings.HasPrefix(v, "[") {
					if err := json.Unmarshal([]byte(v), &step.args); err != nil {
						return nil, fmt.Errorf("line %d: args must be a list of double-quoted strings: %v", n, err)
					}
					continue
				}
				if v != "" {
					return nil, fmt.Errorf("line %d: args must be a list", n)
				}
				for i+1 < len(lines) && (strings.TrimSpace(lines[i+1]) == "" || indentOf(lines[i+1]) > 4) {
					i++
					al := lines[i]
					at := strings.TrimSpace(al)
					if at == "" {
						continue
					}
					if indentOf(al) != 6 || !strings.HasPrefix(at, "- ") {
						return nil, fmt.Errorf("line %d: args items are '      - value'", i+1)
					}
					item := strings.TrimPrefix(at, "- ")
					if item == "|" {
						s, next := block(i+1, 6)
						step.args = append(step.args, s)
						i = next - 1
						continue
					}
					s, err := scalar(item, i+1)
					if err != nil {
						return nil, err
					}
					step.args = append(step.args, s)
				}
			default:
				// Another key (env, volumes, waitFor, …): skip its block.
				for i+1 < len(lines) && (strings.TrimSpace(lines[i+1]) == "" || indentOf(lines[i+1]) > 4) {
					i++
				}
			}
		default:
			// options and other sections: not read.
		}
	}
	if len(cb.steps) == 0 {
		return nil, fmt.Errorf("no steps")
	}
	return cb, nil
}

// Cloud Build's built-in substitutions.
var cbBuiltins = []string{
	"PROJECT_ID", "PROJECT_NUMBER", "BUILD_ID", "LOCATION", "TRIGGER_NAME", "TRIGGER_BUILD_CONFIG_PATH",
	"COMMIT_SHA", "SHORT_SHA", "REVISION_ID", "REPO_NAME", "REPO_FULL_NAME", "BRANCH_NAME", "TAG_NAME", "REF_NAME",
	"SERVICE_ACCOUNT_EMAIL", "SERVICE_ACCOUNT", "_HEAD_BRANCH", "_BASE_BRANCH", "_HEAD_REPO_URL", "_PR_NUMBER",
}

var cbRef = regexp.MustCompile(`^\$(\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))`)

// substitutionRefs lists the $NAME and ${NAME} a text uses; $$ is an escaped
// dollar, which Cloud Build leaves to the shell.
func substitutionRefs(text string) []string {
	var out []string
	for i := 0; i < len(text); i++ {
		if text[i] != '$' {
			continue
		}
		if i+1 < len(text) && text[i+1] == '$' {
			i++
			continue
		}
		m := cbRef.FindStringSubmatch(text[i:])
		if m == nil {
			continue
		}
		name := m[2] + m[3]
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

func checkCloudBuild(src string) findings {
	var fs findings
	const w = "cloudbuild.yaml"
	cb, err := parseCloudBuild(src)
	if err != nil {
		fs.add("cloudbuild.parse", w, "%v", err)
		return fs
	}

	// Every substitution used is built in or defined; every one defined is
	// used, user-defined (a leading _), and documented in the header.
	used := substitutionRefs(cb.text)
	for _, name := range used {
		if _, ok := cb.subs[name]; !ok && !slices.Contains(cbBuiltins, name) {
			fs.add("cloudbuild.undefined", w, "$%s is used but neither defined in substitutions nor built in", name)
		}
	}
	for _, name := range cb.subsOrder {
		if !strings.HasPrefix(name, "_") {
			fs.add("cloudbuild.user_prefix", w, "substitution %s must start with _ (user-defined)", name)
		}
		if !slices.Contains(used, name) {
			fs.add("cloudbuild.unused", w, "substitution %s is defined but never used", name)
		}
		if !strings.Contains(cb.header, name) {
			fs.add("cloudbuild.documented", w, "substitution %s is not documented in the comment at the top", name)
		}
	}
	for _, name := range []string{"_REGION", "_REPOSITORY", "_SERVICE"} {
		if _, ok := cb.subs[name]; !ok {
			fs.add("cloudbuild.required", w, "substitution %s is not defined", name)
		}
	}

	// The steps, in order: vet and test, build, push, deploy.
	find := func(pred func(cbStep) bool) int {
		return slices.IndexFunc(cb.steps, pred)
	}
	vet := find(func(s cbStep) bool { return s.command() == "go vet ./..." })
	test := find(func(s cbStep) bool { return s.command() == testCommand })
	var image string
	build := find(func(s cbStep) bool {
		if len(s.args) == 0 || s.args[0] != "build" || s.entrypoint != "" {
			return false
		}
		for j := 0; j+1 < len(s.args); j++ {
			if s.args[j] == "--tag" || s.args[j] == "-t" {
				image = s.args[j+1]
			}
		}
		return image != ""
	})
	push := find(func(s cbStep) bool {
		return image != "" && s.entrypoint == "" && slices.Equal(s.args, []string{"push", image})
	})
	deploy := find(func(s cbStep) bool {
		c := s.command()
		return image != "" && strings.Contains(c, "gcloud run deploy") && strings.Contains(c, `--image "`+image+`"`)
	})
	switch {
	case vet < 0:
		fs.add("cloudbuild.vet", w, "no step runs go vet ./...")
	case test < 0:
		fs.add("cloudbuild.test", w, "no step runs the test command %s", testCommand)
	case build < 0:
		fs.add("cloudbuild.build", w, "no docker build step with --tag")
	case !strings.HasSuffix(image, ":$COMMIT_SHA"):
		fs.add("cloudbuild.tag", w, "the image %s is not tagged with $COMMIT_SHA", image)
	case push < 0:
		fs.add("cloudbuild.push", w, "no step pushes %s", image)
	case deploy < 0:
		fs.add("cloudbuild.deploy", w, "no step runs gcloud run deploy --image %q", image)
	case !(vet < build && test < build && build < push && push < deploy):
		fs.add("cloudbuild.order", w, "want vet and test, then build, push, deploy")
	}
	if image != "" && !slices.Contains(cb.images, image) {
		fs.add("cloudbuild.images", w, "the images list does not name the pushed image %s", image)
	}
	if deploy >= 0 && push >= 0 {
		checkRollout(&fs, cb, image, push, deploy)
	}
	return fs
}

// checkRollout checks the rollout's steps: the image's revision deployed
// with no traffic under a tag of its commit, the conformance kit of the
// image's own binary run against that tag with an ID token, and only after
// it the traffic, routed to the checked revision by name. What the scripts
// do when they run is rollout_test.go's to show; this reads what they say,
// so that each property fails by name.
func checkRollout(fs *findings, cb *cloudBuild, image string, push, deploy int) {
	const w = "cloudbuild.yaml"
	cmd := func(i int) string { return cb.steps[i].command() }
	find := func(pred func(string) bool) int {
		return slices.IndexFunc(cb.steps, func(s cbStep) bool { return pred(s.command()) })
	}

	d := cmd(deploy)
	if !strings.Contains(d, "--no-traffic") {
		fs.add("cloudbuild.no_traffic", w, "gcloud run deploy lacks --no-traffic: the new revision would serve before the kit has checked it")
	}
	tagOK := false
	if m := regexp.MustCompile(`--tag "\$\$(\w+)"`).FindStringSubmatch(d); m != nil {
		def := regexp.MustCompile(`(?m)^` + m[1] + `="candidate-(.*)"$`).FindStringSubmatch(d)
		switch {
		case def == nil || !strings.Contains(def[1], "$COMMIT_SHA"):
			fs.add("cloudbuild.candidate_tag", w, "the deploy step's --tag must be candidate-… of $COMMIT_SHA, set in $%s: one tag per commit, so that two builds never check or route each other's revision", m[1])
		case !strings.Contains(d, `-v tag="$$`+m[1]+`"`):
			fs.add("cloudbuild.candidate_tag", w, "the deploy step must look its candidate up by the tag it deployed it with ($%s)", m[1])
		default:
			tagOK = true
		}
	}
	if !tagOK && !fs.has("cloudbuild.candidate_tag") {
		fs.add("cloudbuild.candidate_tag", w, `gcloud run deploy must tag the revision: --tag "$$tag", with tag="candidate-…$COMMIT_SHA…"`)
	}

	kit := find(func(c string) bool { return strings.Contains(c, "./sandbox-cloudrun conformance --url ") })
	if kit < 0 {
		fs.add("cloudbuild.kit", w, "no step runs the conformance kit (./sandbox-cloudrun conformance --url …) against the candidate")
		return
	}
	k := cmd(kit)
	m := regexp.MustCompile(`--id-token-env (\w+)`).FindStringSubmatch(k)
	switch {
	case kit < deploy:
		fs.add("cloudbuild.kit", w, "the conformance kit runs before the deploy step")
	case m == nil:
		fs.add("cloudbuild.kit", w, "the conformance kit sends no ID token (--id-token-env): Cloud Run refuses it")
	case !strings.Contains(k, m[1]+"=$$(gcloud auth print-identity-token --audiences="):
		fs.add("cloudbuild.kit", w, "$%s, the kit's ID token, is not the build's own (gcloud auth print-identity-token --audiences=…)", m[1])
	}

	bin := find(func(c string) bool {
		return strings.Contains(c, `docker create --name sandbox-kit "`+image+`"`) &&
			strings.Contains(c, "docker cp sandbox-kit:/sandbox-cloudrun ./sandbox-cloudrun")
	})
	if bin < 0 || bin < push || bin > kit {
		fs.add("cloudbuild.kit_binary", w, "the kit must be the pushed image's own /sandbox-cloudrun, copied to the workspace after the push and before the kit runs")
	}

	for i := 0; i <= kit; i++ {
		if c := cmd(i); strings.Contains(c, "update-traffic") || strings.Contains(c, "--to-latest") {
			fs.add("cloudbuild.traffic_before_kit", w, "step %s routes traffic before the conformance kit has passed", cb.steps[i].id)
		}
	}
	traffic := find(func(c string) bool { return strings.Contains(c, "gcloud run services update-traffic ") })
	switch {
	case traffic < 0:
		fs.add("cloudbuild.traffic", w, "no step routes the traffic to the checked revision (gcloud run services update-traffic)")
	case traffic < kit:
		// said above
	case !strings.Contains(cmd(traffic), `--to-revisions "$$revision=100"`) || strings.Contains(cmd(traffic), "--to-tags"):
		fs.add("cloudbuild.traffic", w, `the traffic step must route to the checked revision by name (--to-revisions "$$revision=100"): LATEST or a tag may name another revision by then`)
	}

	// The bulk job runs the service's image: after the traffic step, the
	// pushed image, which has passed the kit and serves.
	job := find(func(c string) bool { return strings.Contains(c, "gcloud run jobs update ") })
	switch {
	case job < 0:
		fs.add("cloudbuild.bulk_job", w, "no step moves the bulk job to the rolled-out image (gcloud run jobs update … --image)")
	case traffic < 0 || job <= traffic:
		fs.add("cloudbuild.bulk_job", w, "step %s moves the bulk job before the traffic step: only an image that passed the kit and took the traffic may run in it", cb.steps[job].id)
	case !strings.Contains(cmd(job), `--image "`+image+`"`):
		fs.add("cloudbuild.bulk_job", w, "the bulk job must move to the pushed image %s", image)
	case !strings.Contains(cmd(job), `job="${_BULK_JOB}"`) || !strings.Contains(cmd(job), `gcloud run jobs update "$$job"`):
		fs.add("cloudbuild.bulk_job", w, `step %s must move the job _BULK_JOB names (job="${_BULK_JOB}", gcloud run jobs update "$$job"): it is opt-in, and a guessed name may not exist`, cb.steps[job].id)
	}

	// The first build, with _DEPLOY=false, has no service to roll out to.
	for _, i := range []int{deploy, kit, traffic, bin, job} {
		if i >= 0 && !strings.Contains(cmd(i), `if [ "${_DEPLOY}" != "true" ]; then`) {
			fs.add("cloudbuild.deploy_switch", w, "step %s does not stop at once when _DEPLOY is not true", cb.steps[i].id)
		}
	}
}

func TestCloudBuild(t *testing.T) {
	if fs := checkCloudBuild(readFile(t, "../cloudbuild.yaml")); len(fs) > 0 {
		t.Errorf("cloudbuild.yaml:%s", fs)
	}
}

func TestCloudBuildChecksBite(t *testing.T) {
	src := readFile(t, "../cloudbuild.yaml")
	type edit struct{ old, new string }
	cases := []struct {
		name  string
		edits []edit
		want  string
	}{
		{"undefined substitution", []edit{{`--region "${_REGION}" \`, `--region "${_ZONE}" \`}}, "cloudbuild.undefined"},
		{"undefined bare substitution", []edit{{`"VERSION=$COMMIT_SHA"`, `"VERSION=$_VERSION"`}}, "cloudbuild.undefined"},
		{"substitution removed", []edit{{"  _REPOSITORY: \"sandbox\"\n", ""}}, "cloudbuild.undefined"},
		{"unused substitution", []edit{{"  _SERVICE: \"sandbox-cloudrun\"\n", "  _SERVICE: \"sandbox-cloudrun\"\n  _UNUSED: \"x\"\n"}}, "cloudbuild.unused"},
		{"undocumented substitution", []edit{{"#   _REPOSITORY    Artifact Registry repository", "#   the repository"}}, "cloudbuild.documented"},
		{"no vet", []edit{{`args: ["vet", "./..."]`, `args: ["version"]`}}, "cloudbuild.vet"},
		{"tests without the race detector", []edit{{`args: ["test", "-race", "-count=1", "-timeout", "30m", "./..."]`, `args: ["test", "-count=1", "-timeout", "30m", "./..."]`}}, "cloudbuild.test"},
		{"tests with go test's own timeout", []edit{{`args: ["test", "-race", "-count=1", "-timeout", "30m", "./..."]`, `args: ["test", "-race", "-count=1", "./..."]`}}, "cloudbuild.test"},
		{"tagged latest", []edit{{`"${_REGISTRY}/$PROJECT_ID/${_REPOSITORY}/${_SERVICE}:$COMMIT_SHA"
      - "."`, `"${_REGISTRY}/$PROJECT_ID/${_REPOSITORY}/${_SERVICE}:latest"
      - "."`}}, "cloudbuild.tag"},
		{"no deploy", []edit{{`gcloud run deploy "${_SERVICE}"`, `gcloud run services describe "${_SERVICE}"`}}, "cloudbuild.deploy"},
		{"image not listed", []edit{{"images:\n  - \"${_REGISTRY}/$PROJECT_ID/${_REPOSITORY}/${_SERVICE}:$COMMIT_SHA\"\n", "images:\n  - \"${_REGISTRY}/$PROJECT_ID/${_REPOSITORY}/other:$COMMIT_SHA\"\n"}}, "cloudbuild.images"},
		{"outside the subset", []edit{{"substitutions:\n", "substitutions: &subs\n"}}, "cloudbuild.parse"},
		{"deployed with traffic", []edit{{"          --no-traffic \\\n", ""}}, "cloudbuild.no_traffic"},
		{"one tag for every build", []edit{{`tag="candidate-$$(printf %.7s "$COMMIT_SHA")"`, `tag="candidate-next"`}}, "cloudbuild.candidate_tag"},
		{"candidate looked up by another tag", []edit{{`-v tag="$$tag"`, `-v tag="candidate"`}}, "cloudbuild.candidate_tag"},
		{"no tag", []edit{{"          --tag \"$$tag\" \\\n", ""}}, "cloudbuild.candidate_tag"},
		{"no kit", []edit{{"./sandbox-cloudrun conformance --url", "./sandbox-cloudrun version --url"}}, "cloudbuild.kit"},
		{"kit without a token", []edit{{" --id-token-env KIT_ID_TOKEN", ""}}, "cloudbuild.kit"},
		{"kit with a token from elsewhere", []edit{{`KIT_ID_TOKEN=$$(gcloud auth print-identity-token --audiences="$$audience")`, `KIT_ID_TOKEN=$$(cat token)`}}, "cloudbuild.kit"},
		{"kit not the image's", []edit{{"        docker cp sandbox-kit:/sandbox-cloudrun ./sandbox-cloudrun\n", ""}}, "cloudbuild.kit_binary"},
		{"traffic to the latest revision", []edit{{`--to-revisions "$$revision=100"`, "--to-latest"}}, "cloudbuild.traffic"},
		{"traffic to the tag", []edit{{`--to-revisions "$$revision=100"`, `--to-tags "$$(cat candidate-tag)=100"`}}, "cloudbuild.traffic"},
		{"no traffic step", []edit{{`gcloud run services update-traffic "${_SERVICE}"`, `gcloud run services describe "${_SERVICE}"`}}, "cloudbuild.traffic"},
		{"traffic before the kit", []edit{{"        echo \"candidate $$(cat candidate-revision), with no traffic, at $$(cat candidate-url)\"\n",
			"        echo \"candidate $$(cat candidate-revision), with no traffic, at $$(cat candidate-url)\"\n        gcloud run services update-traffic \"${_SERVICE}\" --region \"${_REGION}\" --to-latest\n"}}, "cloudbuild.traffic_before_kit"},
		{"no job step", []edit{{`gcloud run jobs update "$$job"`, `gcloud run jobs describe "$$job"`}}, "cloudbuild.bulk_job"},
		{"job moved with the deploy", []edit{{"        echo \"candidate $$(cat candidate-revision), with no traffic, at $$(cat candidate-url)\"\n",
			"        echo \"candidate $$(cat candidate-revision), with no traffic, at $$(cat candidate-url)\"\n        gcloud run jobs update \"${_SERVICE}-bulk\" --image \"${_REGISTRY}/$PROJECT_ID/${_REPOSITORY}/${_SERVICE}:$COMMIT_SHA\"\n"}}, "cloudbuild.bulk_job"},
		{"job to another image", []edit{{"--image \"${_REGISTRY}/$PROJECT_ID/${_REPOSITORY}/${_SERVICE}:$COMMIT_SHA\" \\\n          --region \"${_REGION}\" \\\n          --quiet; then",
			"--image \"${_REGISTRY}/$PROJECT_ID/${_REPOSITORY}/${_SERVICE}:latest\" \\\n          --region \"${_REGION}\" \\\n          --quiet; then"}}, "cloudbuild.bulk_job"},
		{"job name guessed", []edit{{`job="${_BULK_JOB}"`, `job="${_SERVICE}-bulk"`}}, "cloudbuild.bulk_job"},
		{"job step ignores _DEPLOY", []edit{{"        if [ \"${_DEPLOY}\" != \"true\" ]; then exit 0; fi\n        job=", "        job="}}, "cloudbuild.deploy_switch"},
		{"kit step ignores _DEPLOY", []edit{{"        if [ \"${_DEPLOY}\" != \"true\" ]; then exit 0; fi\n        url=", "        url="}}, "cloudbuild.deploy_switch"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			weak := src
			for _, e := range tc.edits {
				if !strings.Contains(weak, e.old) {
					t.Fatalf("cloudbuild.yaml does not contain %q: the weakening no longer applies, update the test", e.old)
				}
				weak = strings.Replace(weak, e.old, e.new, 1)
			}
			fs := checkCloudBuild(weak)
			t.Logf("findings:%s", fs)
			if !fs.has(tc.want) {
				t.Errorf("weakened cloudbuild.yaml passes check %s; findings:%s", tc.want, fs)
			}
		})
	}
}

func TestSubstitutionRefs(t *testing.T) {
	got := substitutionRefs(`a $A ${_B} $$C $${D} $_E-f ${G}x $ 1`)
	want := []string{"A", "_B", "_E", "G"}
	if !slices.Equal(got, want) {
		t.Errorf("substitutionRefs = %q, want %q", got, want)
	}
}

// testCommand is the test command of .ci/run (which README.md quotes):
// what Cloud Build's test step runs, so that a change of the one command
// reaches both.
var testCommand = func() string {
	b, err := os.ReadFile("../.ci/run")
	if err != nil {
		panic(err)
	}
	m := regexp.MustCompile(`(?m)^test_command='(go test [^']*)'$`).FindSubmatch(b)
	if m == nil {
		panic(".ci/run has no test_command='go test …' line")
	}
	return string(m[1])
}()
