package deploy

// What tofu test cannot check about terraform/: a run block asserts on the
// resources it names, so it cannot notice a resource that is not there to
// name (a second grant, a key, a route); and tofu checks no documentation.
// deploy/tofu-check.sh runs the real tool on the module; these read its files
// as text, which tofu fmt -check keeps in canonical form (one block opener
// per line, attributes indented by two spaces, closing brace at column 0).

import (
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

const (
	moduleDir  = "../terraform"
	exampleDir = "../terraform/examples/basic"
)

var (
	resourceRE = regexp.MustCompile(`(?m)^resource "([a-z0-9_]+)" "([a-z0-9_]+)" \{$`)
	// A top-level block of one kind with its body, up to the closing brace at
	// column 0.
	blockRE = func(kind string) *regexp.Regexp {
		return regexp.MustCompile(`(?ms)^` + kind + ` "([a-z0-9_]+)" \{\n(.*?)^\}$`)
	}
	variableRE = blockRE("variable")
	outputRE   = blockRE("output")
)

// tfFiles reads the .tf files of dir (not its subdirectories), by name.
func tfFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no .tf files in %s (%v)", dir, err)
	}
	out := map[string]string{}
	for _, n := range names {
		out[filepath.Base(n)] = readFile(t, n)
	}
	return out
}

// testFiles concatenates dir/tests/*.tftest.hcl.
func testFiles(t *testing.T, dir string) string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "tests", "*.tftest.hcl"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no tests/*.tftest.hcl in %s (%v)", dir, err)
	}
	var b strings.Builder
	for _, n := range names {
		b.WriteString(readFile(t, n))
	}
	return b.String()
}

// resources lists the TYPE.NAME of every resource of the files, sorted.
func resources(files map[string]string) []string {
	var out []string
	for _, src := range files {
		for _, m := range resourceRE.FindAllStringSubmatch(src, -1) {
			out = append(out, m[1]+"."+m[2])
		}
	}
	sort.Strings(out)
	return out
}

// TestTerraformResourcesTested: every resource of the module and of the
// example is named by a tofu test, so that a new resource comes with
// assertions on what it does.
func TestTerraformResourcesTested(t *testing.T) {
	for _, dir := range []string{moduleDir, exampleDir} {
		tests := testFiles(t, dir)
		rs := resources(tfFiles(t, dir))
		if len(rs) == 0 {
			t.Fatalf("%s: no resources found: has the file format changed?", dir)
		}
		for _, r := range rs {
			if !regexp.MustCompile(`\b` + regexp.QuoteMeta(r) + `\b`).MatchString(tests) {
				t.Errorf("%s: %s is named by no run of tests/*.tftest.hcl", dir, r)
			}
		}
	}
}

// TestTerraformGrants: the module's grants are these eight, each asserted on
// in tests/iam.tftest.hcl, tests/storage.tftest.hcl or
// tests/bulkjob.tftest.hcl; in particular the runtime service account has
// one unconditioned grant (runtime_reads_scripts) and, with the bulk job,
// two more that each carry an IAM condition on a prefix of the bulk bucket;
// the deployers' grant on the bulk job (bulk_deployers, for cloudbuild.yaml
// to move its image) is roles/run.developer on that job alone, and only with
// the job; and the module creates no key, no grant above a single resource
// and no authoritative binding or policy. A new grant is a decision: add it
// here with its tests.
func TestTerraformGrants(t *testing.T) {
	want := []string{
		"google_cloud_run_v2_job_iam_member.bulk_deployers",
		"google_cloud_run_v2_service_iam_member.deployers",
		"google_cloud_run_v2_service_iam_member.invokers",
		"google_service_account_iam_member.deployers_act_as_runtime",
		"google_storage_bucket_iam_member.bulk_reads_inputs",
		"google_storage_bucket_iam_member.bulk_writes_results",
		"google_storage_bucket_iam_member.runtime_reads_scripts",
		"google_storage_bucket_iam_member.script_writers",
	}
	// The bulk grants, by the prefix their condition names: a tofu test
	// asserts on the condition a plan gives them, this that the block is
	// there in the source, with the expression the module builds for it.
	conditioned := map[string]string{
		"bulk_reads_inputs":   "local.bulk_conditions.inputs",
		"bulk_writes_results": "local.bulk_conditions.results",
	}
	resourceBody := regexp.MustCompile(`(?ms)^resource "google_storage_bucket_iam_member" "([a-z0-9_]+)" \{\n(.*?)^\}$`)
	for _, src := range tfFiles(t, moduleDir) {
		for _, m := range resourceBody.FindAllStringSubmatch(src, -1) {
			expr, ok := conditioned[m[1]]
			if !ok {
				continue
			}
			delete(conditioned, m[1])
			if !regexp.MustCompile(`(?m)^  condition \{\n(?:    .*\n)*?    expression\s+= ` + regexp.QuoteMeta(expr) + `\n`).MatchString(m[2]) {
				t.Errorf("google_storage_bucket_iam_member.%s: no condition block whose expression is %s: the runtime service account's bulk grants stop at a prefix", m[1], expr)
			}
		}
	}
	for name := range conditioned {
		t.Errorf("google_storage_bucket_iam_member.%s: not found", name)
	}
	checkJobDeployers(t, tfFiles(t, moduleDir))
	var grants []string
	for _, r := range resources(tfFiles(t, moduleDir)) {
		typ := strings.SplitN(r, ".", 2)[0]
		switch {
		case typ == "google_service_account_key":
			t.Errorf("%s: the module creates no service account keys", r)
		case strings.HasPrefix(typ, "google_project_iam_"), strings.HasPrefix(typ, "google_folder_iam_"),
			strings.HasPrefix(typ, "google_organization_iam_"), strings.HasPrefix(typ, "google_billing_account_iam_"):
			t.Errorf("%s: the module grants nothing above a single resource", r)
		case strings.HasSuffix(typ, "_iam_binding"), strings.HasSuffix(typ, "_iam_policy"), strings.HasSuffix(typ, "_iam_audit_config"):
			t.Errorf("%s: only additive _iam_member grants; an authoritative one replaces grants it does not list", r)
		case strings.Contains(typ, "_iam_"):
			grants = append(grants, r)
		}
	}
	if !slices.Equal(grants, want) {
		t.Errorf("the module's grants are %v, want %v", grants, want)
	}
	// allUsers and allAuthenticatedUsers appear only where variables.tf
	// refuses them.
	for name, src := range tfFiles(t, moduleDir) {
		if name == "variables.tf" {
			continue
		}
		for _, pub := range []string{"allUsers", "allAuthenticatedUsers"} {
			if strings.Contains(src, pub) {
				t.Errorf("%s mentions %s", name, pub)
			}
		}
	}
}

// checkJobDeployers: the deployers' grant on the bulk job exists only with
// the job (its for_each is empty without it), is roles/run.developer, and
// names the module's job, not another one or a role that could change who
// may run it. A tofu test asserts on what a plan gives; this that the source
// says so, which no plan of a disabled job can show.
func checkJobDeployers(t *testing.T, files map[string]string) {
	t.Helper()
	body := regexp.MustCompile(`(?ms)^resource "google_cloud_run_v2_job_iam_member" "bulk_deployers" \{\n(.*?)^\}$`)
	var found []string
	for _, src := range files {
		for _, m := range body.FindAllStringSubmatch(src, -1) {
			found = append(found, m[1])
		}
	}
	if len(found) != 1 {
		t.Errorf("google_cloud_run_v2_job_iam_member.bulk_deployers: %d definitions, want 1", len(found))
		return
	}
	for _, want := range []string{
		`(?m)^  for_each = local\.bulk_enabled \? toset\(var\.deployers\) : toset\(\[\]\)$`,
		`(?m)^  name     = google_cloud_run_v2_job\.bulk\[0\]\.name$`,
		`(?m)^  role     = "roles/run\.developer"$`,
		`(?m)^  member   = each\.value$`,
	} {
		if !regexp.MustCompile(want).MatchString(found[0]) {
			t.Errorf("google_cloud_run_v2_job_iam_member.bulk_deployers does not match %s: the deployers get roles/run.developer on the bulk job, for each of them, only with the job", want)
		}
	}
}

// TestTerraformDocumented: every variable of the module and the example has a
// type and a description, and every output a description.
func TestTerraformDocumented(t *testing.T) {
	for _, dir := range []string{moduleDir, exampleDir} {
		for name, src := range tfFiles(t, dir) {
			for _, m := range variableRE.FindAllStringSubmatch(src, -1) {
				if !regexp.MustCompile(`(?m)^  type\s+=`).MatchString(m[2]) {
					t.Errorf("%s/%s: variable %s has no type", dir, name, m[1])
				}
				if !regexp.MustCompile(`(?m)^  description\s+= "\S`).MatchString(m[2]) {
					t.Errorf("%s/%s: variable %s has no description", dir, name, m[1])
				}
			}
			for _, m := range outputRE.FindAllStringSubmatch(src, -1) {
				if !regexp.MustCompile(`(?m)^  description\s+= "\S`).MatchString(m[2]) {
					t.Errorf("%s/%s: output %s has no description", dir, name, m[1])
				}
			}
		}
	}
}

// TestTerraformVersionsPinned: Terraform and the Google provider are pinned
// with a lower and an upper bound, in the module and the example.
func TestTerraformVersionsPinned(t *testing.T) {
	for _, dir := range []string{moduleDir, exampleDir} {
		src := readFile(t, dir+"/versions.tf")
		if !regexp.MustCompile(`(?m)^  required_version = ">= [0-9.]+, < [0-9.]+"$`).MatchString(src) {
			t.Errorf("%s/versions.tf: required_version needs a lower and an upper bound", dir)
		}
		if !regexp.MustCompile(`(?s)google = \{\s+source\s+= "hashicorp/google".*?version\s+= ">= [0-9.]+, < [0-9.]+"`).MatchString(src) {
			t.Errorf(`%s/versions.tf: required_providers must pin google = { source = "hashicorp/google", version = ">= x, < y" }`, dir)
		}
	}
}

func names(re *regexp.Regexp, files map[string]string) []string {
	var out []string
	for _, src := range files {
		for _, m := range re.FindAllStringSubmatch(src, -1) {
			out = append(out, m[1])
		}
	}
	sort.Strings(out)
	return out
}

// TestModuleReadme: terraform/README.md lists every input and output.
func TestModuleReadme(t *testing.T) {
	files := tfFiles(t, moduleDir)
	readme := readFile(t, moduleDir+"/README.md")
	for _, v := range names(variableRE, files) {
		if !strings.Contains(readme, "| `"+v+"` |") {
			t.Errorf("terraform/README.md does not list the input %s", v)
		}
	}
	for _, o := range names(outputRE, files) {
		if !strings.Contains(readme, "| `"+o+"` |") {
			t.Errorf("terraform/README.md does not list the output %s", o)
		}
	}
}
