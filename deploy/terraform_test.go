package deploy

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

const (
	moduleDir  = "../terraform"
	exampleDir = "../terraform/examples/basic"
)

func loadT(t *testing.T, dir string) *tfModule {
	t.Helper()
	m, err := loadModule(dir)
	if err != nil {
		t.Fatalf("loading %s: %v", dir, err)
	}
	return m
}

// TestTerraformModuleHardening runs every hardening check on terraform/.
func TestTerraformModuleHardening(t *testing.T) {
	m := loadT(t, moduleDir)
	if fs := checkModule(m); len(fs) > 0 {
		t.Errorf("terraform/ fails %d hardening check(s):%s", len(fs), fs)
	}
}

// TestTerraformChecksBite weakens one property at a time in a copy of the
// module and asserts that the checks report it: a check that passes on a
// weakened module proves nothing.
func TestTerraformChecksBite(t *testing.T) {
	type edit struct{ file, old, new string }
	cases := []struct {
		name  string
		edits []edit
		want  string
	}{
		{"concurrency above 1", []edit{{"service.tf", "max_instance_request_concurrency = 1", "max_instance_request_concurrency = 2"}}, "service.concurrency"},
		{"concurrency from a variable", []edit{{"service.tf", "max_instance_request_concurrency = 1", "max_instance_request_concurrency = var.max_instances"}}, "service.concurrency"},
		{"concurrency unset", []edit{{"service.tf", "max_instance_request_concurrency = 1", ""}}, "service.concurrency"},
		{"allUsers invoker", []edit{{"service.tf", "member   = each.value\n}\n\n# Who may roll", "member   = \"allUsers\"\n}\n\n# Who may roll"}}, "iam.public"},
		{"allAuthenticatedUsers reader", []edit{{"storage.tf", `member = "serviceAccount:${google_service_account.runtime.email}"`, `member = "allAuthenticatedUsers"`}}, "iam.public"},
		{"public member in a default", []edit{{"variables.tf", "variable \"script_writers\" {\n  type        = list(string)\n  default     = []", "variable \"script_writers\" {\n  type        = list(string)\n  default     = [\"allUsers\"]"}}, "iam.public"},
		{"invoker list may be public", []edit{{"variables.tf", `!contains(["allUsers", "allAuthenticatedUsers"], m)`, "true"}, {"variables.tf", `"^(user|serviceAccount|group|domain|principal|principalSet):[^\\s]+$", m))])
    error_message = "Each of invoker_members`, `"^.+$", m))])
    error_message = "Each of invoker_members`}}, "iam.public"},
		{"writers may be public", []edit{{"variables.tf", `condition     = alltrue([for m in var.script_writers : can(regex("^(user|serviceAccount|group|domain|principal|principalSet):[^\\s]+$", m))])`, `condition     = true`}}, "iam.public"},
		{"invoker list allowed empty", []edit{{"variables.tf", "length(var.invoker_members) > 0", "length(var.invoker_members) >= 0"}}, "iam.invoker_nonempty"},
		{"invoker list defaults empty", []edit{{"variables.tf", "variable \"invoker_members\" {\n  type        = list(string)\n", "variable \"invoker_members\" {\n  type        = list(string)\n  default     = []\n"}}, "iam.invoker_nonempty"},
		{"invoker not from the variable", []edit{{"service.tf", "for_each = toset(var.invoker_members)", "for_each = toset([\"group:g@example.com\"])"}}, "iam.invoker"},
		{"runtime role widened", []edit{{"storage.tf", `role   = "roles/storage.objectViewer"`, `role   = "roles/storage.objectAdmin"`}}, "iam.runtime_role"},
		{"runtime granted on the project", []edit{{"main.tf", "resource \"google_service_account\" \"runtime\" {", "resource \"google_project_iam_member\" \"extra\" {\n  project = var.project_id\n  role    = \"roles/viewer\"\n  member  = \"serviceAccount:${google_service_account.runtime.email}\"\n}\n\nresource \"google_service_account\" \"runtime\" {"}}, "iam.project_level"},
		{"second grant to the runtime account", []edit{{"storage.tf", "# Uploaders create objects", "resource \"google_storage_bucket_iam_member\" \"runtime_writes\" {\n  count  = var.scripts_bucket_enabled ? 1 : 0\n  bucket = google_storage_bucket.scripts[0].name\n  role   = \"roles/storage.objectCreator\"\n  member = \"serviceAccount:${google_service_account.runtime.email}\"\n}\n\n# Uploaders create objects"}}, "iam.runtime_role"},
		{"runtime grant kept without a bucket", []edit{{"storage.tf", "resource \"google_storage_bucket_iam_member\" \"runtime_reads_scripts\" {\n  count = var.scripts_bucket_enabled ? 1 : 0", "resource \"google_storage_bucket_iam_member\" \"runtime_reads_scripts\" {\n  count = 1"}}, "credential_free.leftover"},
		{"authoritative IAM", []edit{{"storage.tf", "resource \"google_storage_bucket_iam_member\" \"script_writers\" {", "resource \"google_storage_bucket_iam_binding\" \"script_writers\" {"}, {"storage.tf", "member = each.value", "members = [each.value]"}}, "iam.authoritative"},
		{"service account key", []edit{{"main.tf", "resource \"google_service_account\" \"runtime\" {", "resource \"google_service_account_key\" \"runtime\" {\n  service_account_id = google_service_account.runtime.name\n}\n\nresource \"google_service_account\" \"runtime\" {"}}, "iam.keys"},
		{"public access prevention inherited", []edit{{"storage.tf", `public_access_prevention    = "enforced"`, `public_access_prevention    = "inherited"`}}, "bucket.public_access_prevention"},
		{"uniform access off", []edit{{"storage.tf", "uniform_bucket_level_access = true", "uniform_bucket_level_access = false"}}, "bucket.uniform_access"},
		{"versioning off", []edit{{"storage.tf", "versioning {\n    enabled = true", "versioning {\n    enabled = false"}}, "bucket.versioning"},
		{"force_destroy true", []edit{{"storage.tf", "force_destroy = false", "force_destroy = true"}}, "bucket.force_destroy"},
		{"soft delete off", []edit{{"storage.tf", "retention_duration_seconds = var.soft_delete_retention_days * 86400", "retention_duration_seconds = 0"}}, "bucket.soft_delete"},
		{"bucket always created", []edit{{"storage.tf", "resource \"google_storage_bucket\" \"scripts\" {\n  count = var.scripts_bucket_enabled ? 1 : 0", "resource \"google_storage_bucket\" \"scripts\" {\n  count = 1"}}, "bucket.credential_free"},
		{"store kept in credential-free mode", []edit{{"main.tf", `: "none"`, `: "gs://elsewhere"`}}, "credential_free.store_url"},
		{"egress private ranges only", []edit{{"service.tf", `egress = "ALL_TRAFFIC"`, `egress = "PRIVATE_RANGES_ONLY"`}}, "service.egress"},
		{"no VPC egress", []edit{{"service.tf", "    vpc_access {\n      egress = \"ALL_TRAFFIC\"\n      network_interfaces {\n        network    = google_compute_network.egress.id\n        subnetwork = google_compute_subnetwork.egress.id\n      }\n    }\n", ""}}, "service.egress"},
		{"no deny-all egress rule", []edit{{"network.tf", "  deny {\n    protocol = \"all\"\n  }\n", "  allow {\n    protocol = \"icmp\"\n  }\n"}}, "net.deny_all"},
		{"deny-all ranks above the allow", []edit{{"network.tf", "priority           = 65000", "priority           = 900"}}, "net.deny_all"},
		{"deny-all only for tagged instances", []edit{{"network.tf", "  priority           = 65000\n", "  priority           = 65000\n  target_tags        = [\"x\"]\n"}}, "net.deny_all"},
		{"egress allowed to the internet", []edit{{"network.tf", "destination_ranges = [local.private_google_apis_range]", "destination_ranges = [\"0.0.0.0/0\"]"}}, "net.firewall_allow"},
		{"egress allowed on any port", []edit{{"network.tf", "    protocol = \"tcp\"\n    ports    = [\"443\"]", "    protocol = \"all\""}}, "net.firewall_allow"},
		{"default route", []edit{{"network.tf", "dest_range       = local.private_google_apis_range", "dest_range       = \"0.0.0.0/0\""}}, "net.routes"},
		{"default routes kept", []edit{{"network.tf", "delete_default_routes_on_create = true", "delete_default_routes_on_create = false"}}, "net.default_route"},
		{"no private google access", []edit{{"network.tf", "private_ip_google_access = true", "private_ip_google_access = false"}}, "net.private_google_access"},
		{"public DNS zone", []edit{{"network.tf", `visibility  = "private"`, `visibility  = "public"`}}, "net.dns"},
		{"no timeout", []edit{{"service.tf", "    timeout = var.request_timeout\n", ""}}, "service.timeout"},
		{"timeout not passed to the container", []edit{{"service.tf", "name  = \"REQUEST_TIMEOUT\"\n        value = var.request_timeout", "name  = \"REQUEST_TIMEOUT\"\n        value = \"60s\""}}, "service.timeout_env"},
		{"ingress defaults to all", []edit{{"variables.tf", `default     = "INGRESS_TRAFFIC_INTERNAL_LOAD_BALANCER"`, `default     = "INGRESS_TRAFFIC_ALL"`}}, "service.ingress"},
		{"ingress unset", []edit{{"service.tf", "  ingress             = var.ingress\n", ""}}, "service.ingress"},
		{"invoker IAM disabled", []edit{{"service.tf", "invoker_iam_disabled = false", "invoker_iam_disabled = true"}}, "service.invoker_iam"},
		{"gen1", []edit{{"service.tf", "EXECUTION_ENVIRONMENT_GEN2\"", "EXECUTION_ENVIRONMENT_GEN1\""}}, "service.gen2"},
		{"default compute identity", []edit{{"service.tf", "    service_account = google_service_account.runtime.email\n", ""}}, "service.identity"},
		{"image not ignored", []edit{{"service.tf", "      template[0].containers[0].image,\n", ""}}, "service.ignore_image"},
		{"readiness probe on /healthz", []edit{{"service.tf", `path = "/readyz"`, `path = "/healthz"`}}, "service.probes"},
		{"no startup CPU boost", []edit{{"service.tf", "startup_cpu_boost = true", "startup_cpu_boost = false"}}, "service.cpu_boost"},
		{"evaluations in parallel", []edit{{"service.tf", "name  = \"MAX_CONCURRENT_EVALUATIONS\"\n        value = \"1\"", "name  = \"MAX_CONCURRENT_EVALUATIONS\"\n        value = \"4\""}}, "service.app_concurrency"},
		{"fixed deletion protection", []edit{{"service.tf", "deletion_protection = var.deletion_protection", "deletion_protection = false"}}, "service.deletion_protection"},
		{"provider unpinned", []edit{{"versions.tf", `version = ">= 6.8.0, < 8.0.0"`, `version = ">= 6.8.0"`}}, "versions.provider"},
		{"undocumented variable", []edit{{"variables.tf", "  description = \"Project that holds every resource of the module.\"\n", ""}}, "variables.documented"},
		{"missing output", []edit{{"outputs.tf", "output \"service_account_email\" {", "output \"runtime_email\" {"}}, "outputs.missing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyModule(t, moduleDir)
			for _, e := range tc.edits {
				p := filepath.Join(dir, e.file)
				src, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Contains(src, []byte(e.old)) {
					t.Fatalf("%s does not contain %q: the weakening no longer applies, update the test", e.file, e.old)
				}
				src = bytes.Replace(src, []byte(e.old), []byte(e.new), 1)
				if err := os.WriteFile(p, src, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			m := loadT(t, dir)
			fs := checkModule(m)
			t.Logf("findings:%s", fs)
			if !fs.has(tc.want) {
				t.Errorf("weakened module passes check %s; findings:%s", tc.want, fs)
			}
		})
	}
}

// copyModule copies the .tf files of dir (not its subdirectories) into a
// temporary directory.
func copyModule(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	names, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no .tf files in %s (%v)", dir, err)
	}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, filepath.Base(n)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestTerraformVariableValidation feeds values to the module's variables and
// checks which their validation blocks accept.
func TestTerraformVariableValidation(t *testing.T) {
	m := loadT(t, moduleDir)
	strs := func(ss ...string) cty.Value {
		if len(ss) == 0 {
			return cty.ListValEmpty(cty.String)
		}
		var vs []cty.Value
		for _, s := range ss {
			vs = append(vs, cty.StringVal(s))
		}
		return cty.ListVal(vs)
	}
	cases := []struct {
		variable string
		value    cty.Value
		ok       bool
	}{
		{"invoker_members", strs("serviceAccount:loom@p.iam.gserviceaccount.com"), true},
		{"invoker_members", strs(), false},
		{"invoker_members", strs("allUsers"), false},
		{"invoker_members", strs("user:a@example.com", "allAuthenticatedUsers"), false},
		{"invoker_members", strs("a@example.com"), false},
		{"script_writers", strs(), true},
		{"script_writers", strs("allUsers"), false},
		{"deployers", strs("allAuthenticatedUsers"), false},
		{"deployers", strs("serviceAccount:123-compute@developer.gserviceaccount.com"), true},
		{"ingress", cty.StringVal("INGRESS_TRAFFIC_INTERNAL_ONLY"), true},
		{"ingress", cty.StringVal("all"), false},
		{"request_timeout", cty.StringVal("60s"), true},
		{"request_timeout", cty.StringVal("3600s"), true},
		{"request_timeout", cty.StringVal("3601s"), false},
		{"request_timeout", cty.StringVal("0s"), false},
		{"request_timeout", cty.StringVal("1m"), false},
		{"request_timeout", cty.StringVal("60"), false},
		{"max_wall_clock", cty.StringVal("30s"), true},
		{"max_wall_clock", cty.StringVal("500ms"), false},
		{"memory", cty.StringVal("1Gi"), true},
		{"memory", cty.StringVal("512Mi"), true},
		{"memory", cty.StringVal("32Gi"), true},
		{"memory", cty.StringVal("256Mi"), false},
		{"memory", cty.StringVal("64Gi"), false},
		{"memory", cty.StringVal("1G"), false},
		{"memory", cty.StringVal("1024"), false},
		{"cpu", cty.StringVal("2"), true},
		{"cpu", cty.StringVal("0.5"), false},
		{"image", cty.StringVal("europe-west1-docker.example/p/sandbox/sandbox-cloudrun:0123abc"), true},
		{"image", cty.StringVal("europe-west1-docker.example/p/sandbox/sandbox-cloudrun@sha256:" + strings.Repeat("ab", 32)), true},
		{"image", cty.StringVal("europe-west1-docker.example/p/sandbox/sandbox-cloudrun:latest"), false},
		{"image", cty.StringVal("sandbox-cloudrun"), false},
		{"min_instances", cty.NumberIntVal(0), true},
		{"min_instances", cty.NumberFloatVal(1.5), false},
		{"max_instances", cty.NumberIntVal(0), false},
		{"soft_delete_retention_days", cty.NumberIntVal(0), false},
		{"soft_delete_retention_days", cty.NumberIntVal(7), true},
		{"otel_exporter", cty.StringVal("otlp"), false},
		{"env", cty.MapVal(map[string]cty.Value{"POOL_SIZE": cty.StringVal("4")}), true},
		{"env", cty.MapVal(map[string]cty.Value{"MAX_CONCURRENT_EVALUATIONS": cty.StringVal("8")}), false},
		{"env", cty.MapVal(map[string]cty.Value{"STORE_URL": cty.StringVal("gs://other")}), false},
		{"name", cty.StringVal("sandbox-cloudrun"), true},
		{"name", cty.StringVal("a-name-that-is-far-too-long"), false},
		{"bucket_name", cty.NullVal(cty.String), true},
		{"bucket_name", cty.StringVal("My_Bucket"), false},
	}
	for _, tc := range cases {
		err := m.validate(tc.variable, tc.value)
		if (err == nil) != tc.ok {
			t.Errorf("var.%s = %s: accepted %v, want %v (%v)", tc.variable, valueText(tc.value, nil), err == nil, tc.ok, err)
		}
	}
	// Every default passes its own validation.
	for _, name := range sortedKeys(m.variables) {
		v := m.variables[name]
		if v.hasDefault {
			if err := m.validate(name, v.def); err != nil {
				t.Errorf("var.%s: the default fails its own validation: %v", name, err)
			}
		}
	}
}

// TestTerraformLocalsEvaluate evaluates the module's locals under its
// defaults: the timeout arithmetic, the credential-free store and the
// environment must all be computable (or Terraform would fail at plan).
func TestTerraformLocalsEvaluate(t *testing.T) {
	m := loadT(t, moduleDir)
	required := map[string]cty.Value{
		"project_id":      cty.StringVal("my-project"),
		"region":          cty.StringVal("europe-west1"),
		"image":           cty.StringVal("host.example/my-project/sandbox/sandbox-cloudrun:abc"),
		"invoker_members": cty.ListVal([]cty.Value{cty.StringVal("serviceAccount:loom@my-project.iam.gserviceaccount.com"), cty.StringVal("group:g@example.com")}),
	}
	ctx := m.evalCtx(required)
	local := ctx.Variables["local"]
	get := func(name string) cty.Value { return local.GetAttr(name) }
	if v := get("request_timeout_seconds"); !v.RawEquals(cty.NumberIntVal(60)) {
		t.Errorf("local.request_timeout_seconds = %s, want 60", valueText(v, nil))
	}
	if v := get("bucket_name"); !v.RawEquals(cty.StringVal("my-project-sandbox-cloudrun-scripts")) {
		t.Errorf("local.bucket_name = %s", valueText(v, nil))
	}
	if v := get("allowed_callers"); !v.IsWhollyKnown() || v.LengthInt() != 1 || v.Index(cty.NumberIntVal(0)).AsString() != "loom@my-project.iam.gserviceaccount.com" {
		t.Errorf("local.allowed_callers = %s, want the one service account's email", valueText(v, nil))
	}
	env := get("env")
	if !env.IsWhollyKnown() {
		t.Fatalf("local.env is not known under the defaults")
	}
	if v := env.GetAttr("DEFAULT_WALL_CLOCK"); !v.RawEquals(cty.StringVal("5s")) {
		t.Errorf("DEFAULT_WALL_CLOCK = %s, want 5s", valueText(v, nil))
	}
	if env.Type().HasAttribute("AUTH_AUDIENCE") {
		t.Errorf("AUTH_AUDIENCE is set although auth_audience is empty")
	}
	// With the service's own token check on, the callers are the invokers' emails.
	with := map[string]cty.Value{"auth_audience": cty.StringVal("https://sandbox.example")}
	for k, v := range required {
		with[k] = v
	}
	env = m.evalCtx(with).Variables["local"].GetAttr("env")
	if !env.Type().HasAttribute("AUTH_ALLOWED_CALLERS") || !env.GetAttr("AUTH_ALLOWED_CALLERS").RawEquals(cty.StringVal("loom@my-project.iam.gserviceaccount.com")) {
		t.Errorf("AUTH_ALLOWED_CALLERS = %#v", env)
	}
}

// TestTerraformExample checks terraform/examples/basic: it calls the module,
// passes only inputs the module declares and every input it requires, and
// holds no public member either.
func TestTerraformExample(t *testing.T) {
	root := loadT(t, moduleDir)
	ex := loadT(t, exampleDir)
	var fs findings
	checkNoPublicMembers(ex, &fs)
	checkVariablesDocumented(ex, &fs)
	checkVersions(ex, &fs)
	if len(fs) > 0 {
		t.Errorf("examples/basic:%s", fs)
	}
	var calls int
	for _, mod := range ex.modules {
		src, _ := constString(mod.body(), "source")
		if src != "../.." {
			continue
		}
		calls++
		passed := map[string]bool{}
		for name := range mod.body().Attributes {
			switch name {
			case "source", "version", "providers", "depends_on", "count", "for_each":
				continue
			}
			passed[name] = true
			if root.variables[name] == nil {
				t.Errorf("%s passes %s, which the module does not declare", mod.where(), name)
			}
		}
		for _, name := range sortedKeys(root.variables) {
			if v := root.variables[name]; !v.hasDefault && !passed[name] {
				t.Errorf("%s does not pass the required input %s", mod.where(), name)
			}
		}
	}
	if calls != 1 {
		t.Errorf("examples/basic calls the module (source = \"../..\") %d times, want 1", calls)
	}
}

// TestTerraformFormat: hclwrite.Format, the formatter terraform fmt uses,
// leaves every .tf and .tfvars file under terraform/ unchanged. (No terraform
// binary can be had here; where you have one, also run
// terraform fmt -check -recursive and terraform validate.)
func TestTerraformFormat(t *testing.T) {
	var n int
	err := filepath.WalkDir(moduleDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".terraform" {
			return filepath.SkipDir
		}
		if d.IsDir() || !(strings.HasSuffix(p, ".tf") || strings.Contains(filepath.Base(p), ".tfvars")) {
			return nil
		}
		n++
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if _, diags := hclsyntax.ParseConfig(src, p, hcl.InitialPos); diags.HasErrors() {
			t.Errorf("%s does not parse: %v", p, diags)
			return nil
		}
		if got := hclwrite.Format(src); !bytes.Equal(got, src) {
			t.Errorf("%s is not in canonical format (terraform fmt would change it):\n%s", p, firstDiff(src, got))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 8 {
		t.Fatalf("found only %d Terraform files under %s", n, moduleDir)
	}
}

// TestFormatCheckBites: the format check notices a misaligned file.
func TestFormatCheckBites(t *testing.T) {
	src := []byte("resource \"x\" \"y\" {\n  a = 1\n  bbb = 2\n}\n")
	if bytes.Equal(hclwrite.Format(src), src) {
		t.Fatal("hclwrite.Format leaves misaligned attributes alone: the format check proves nothing")
	}
}

// firstDiff shows the first line that differs.
func firstDiff(a, b []byte) string {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n  have %q\n  want %q", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("lengths differ: %d and %d lines", len(al), len(bl))
}

// TestModuleReadme: terraform/README.md lists every input and output.
func TestModuleReadme(t *testing.T) {
	m := loadT(t, moduleDir)
	readme := readFile(t, moduleDir+"/README.md")
	for _, name := range sortedKeys(m.variables) {
		if !strings.Contains(readme, "| `"+name+"` |") {
			t.Errorf("terraform/README.md does not list the input %s", name)
		}
	}
	for _, o := range m.outputs {
		if !strings.Contains(readme, "| `"+o.name+"` |") {
			t.Errorf("terraform/README.md does not list the output %s", o.name)
		}
	}
}
