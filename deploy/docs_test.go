package deploy

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// TestDeployGuide: docs/deploy.md walks through each step of a first
// deployment, with the commands that do it.
func TestDeployGuide(t *testing.T) {
	doc := readFile(t, "../docs/deploy.md")
	steps := []struct{ what, needle string }{
		{"enable the APIs", "gcloud services enable"},
		{"create the image repository", "gcloud artifacts repositories create"},
		{"build and push with cloudbuild.yaml", "gcloud builds submit --config cloudbuild.yaml"},
		{"set every user substitution", "_REGION=$REGION,_REGISTRY=$REGISTRY,_REPOSITORY=$REPOSITORY,_SERVICE=$SERVICE,_DEPLOY=false"},
		{"terraform apply", "terraform apply"},
		{"upload a script", " put examples/scripts/"},
		{"call with an ID token", "gcloud auth print-identity-token"},
		{"run the conformance kit against the service", "conformance --url"},
		{"the credential-free variant", "scripts_bucket_enabled = false"},
		{"build the image and run it as Cloud Run does, before pushing", "bash deploy/image-test.sh"},
		{"roll out by hand as the build does: no traffic, a tag", "--no-traffic --tag"},
		{"route the traffic to the checked revision by name", `--to-revisions "$REVISION=100"`},
		{"check a revision that terraform apply made", "--update-tags"},
		{"serve with a weaker worker lock-down, knowing what it gives up", `WORKER_LOCKDOWN = "best-effort"`},
		{"read the platform's line of a failed startup probe", "STARTUP HTTP probe failed"},
		{"fit the egress network beside an existing one", "Private Google Access and the DNS zone"},
	}
	for _, s := range steps {
		if !strings.Contains(doc, s.needle) {
			t.Errorf("docs/deploy.md does not show how to %s (%q)", s.what, s.needle)
		}
	}
}

// TestDeployGuideSettingsExist: every setting docs/deploy.md tells operators
// to make (an inline `name = value`, or a line of an hcl block: the
// terraform.tfvars they edit) is a variable of terraform/examples/basic that
// its module block passes on, and terraform.tfvars.example shows it (set or
// commented out). Otherwise the instruction would do nothing, or fail on an
// undeclared variable.
func TestDeployGuideSettingsExist(t *testing.T) {
	doc := readFile(t, "../docs/deploy.md")
	mainTF := readFile(t, exampleDir+"/main.tf")
	tfvars := readFile(t, exampleDir+"/terraform.tfvars.example")
	vars := map[string]bool{}
	for _, v := range names(variableRE, tfFiles(t, exampleDir)) {
		vars[v] = true
	}

	settings := map[string]bool{}
	for _, m := range regexp.MustCompile("`([a-z][a-z0-9_]*) = [^`]+`").FindAllStringSubmatch(doc, -1) {
		settings[m[1]] = true
	}
	for _, block := range regexp.MustCompile("(?s)```hcl\n(.*?)```").FindAllStringSubmatch(doc, -1) {
		for _, m := range regexp.MustCompile(`(?m)^([a-z][a-z0-9_]*)\s*=`).FindAllStringSubmatch(block[1], -1) {
			settings[m[1]] = true
		}
	}
	if len(settings) < 10 {
		t.Fatalf("found only %d settings in docs/deploy.md: has its form changed?", len(settings))
	}
	for name := range settings {
		if !vars[name] {
			t.Errorf("docs/deploy.md tells operators to set %s, which terraform/examples/basic does not declare", name)
			continue
		}
		if !regexp.MustCompile(`(?m)^  ` + name + `\s+= var\.` + name + `$`).MatchString(mainTF) {
			t.Errorf("terraform/examples/basic/main.tf does not pass %s = var.%s to the module", name, name)
		}
		if !regexp.MustCompile(`(?m)^(# )?` + name + `\s+=`).MatchString(tfvars) {
			t.Errorf("terraform/examples/basic/terraform.tfvars.example does not show %s", name)
		}
	}
	// The example file's own settings, set or commented out, are variables.
	for _, m := range regexp.MustCompile(`(?m)^(?:# )?([a-z][a-z0-9_]*)\s+=`).FindAllStringSubmatch(tfvars, -1) {
		if !vars[m[1]] {
			t.Errorf("terraform.tfvars.example sets %s, which terraform/examples/basic does not declare", m[1])
		}
	}
}

// TestDeployGuidePointers: where cloudbuild.yaml, the module and its README
// send a reader to a section of docs/deploy.md (`docs/deploy.md, "Rolling
// out"`, or a link to deploy.md#rolling-out), the guide has that section, so
// that a renamed heading takes its pointers along.
func TestDeployGuidePointers(t *testing.T) {
	doc := readFile(t, "../docs/deploy.md")
	headings, anchors := map[string]bool{}, map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#{2,4} (.+?)\s*$`).FindAllStringSubmatch(doc, -1) {
		headings[m[1]] = true
		anchors[githubAnchor(m[1])] = true
	}
	files := map[string]string{"cloudbuild.yaml": readFile(t, "../cloudbuild.yaml"), "docs/deploy.md": doc,
		"terraform/README.md": readFile(t, moduleDir+"/README.md")}
	for name, src := range tfFiles(t, moduleDir) {
		files["terraform/"+name] = src
	}
	// a name may be broken across comment lines, and quoted with \" in HCL
	pointer := regexp.MustCompile(`docs/deploy\.md,\s*(?:#\s*)?\\?"([^"\\]{1,120})\\?"`)
	link := regexp.MustCompile(`\]\((?:(?:\.\./)?docs/deploy\.md|\.\./docs/deploy\.md)?#([^)\s]+)\)`)
	leader := regexp.MustCompile(`\s*\n\s*#?\s*`)
	found := 0
	for name, src := range files {
		for _, m := range pointer.FindAllStringSubmatch(src, -1) {
			found++
			if h := leader.ReplaceAllString(m[1], " "); !headings[h] {
				t.Errorf("%s points to docs/deploy.md, %q, which is not a heading of docs/deploy.md", name, h)
			}
		}
		if name != "docs/deploy.md" && name != "terraform/README.md" {
			continue
		}
		for _, m := range link.FindAllStringSubmatch(src, -1) {
			if name == "terraform/README.md" && !strings.Contains(m[0], "deploy.md") {
				continue // an anchor of the README itself
			}
			found++
			if !anchors[m[1]] {
				t.Errorf("%s links to docs/deploy.md#%s, which no heading of docs/deploy.md makes", name, m[1])
			}
		}
	}
	if found < 10 {
		t.Errorf("found %d pointers into docs/deploy.md: has the form changed?", found)
	}
}

// githubAnchor is the anchor GitHub makes of a heading: lower case, without
// punctuation but hyphens and underscores, spaces as hyphens.
func githubAnchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// The guide's hand-run kit runs as the rollout's build runs it: with the
// build's --backend-grace (a cold revision answers slower than a warm one),
// and, behind gcloud's proxy, only once the proxy answers (a fixed sleep
// races its start).
func TestDeployGuideRunsTheKitAsTheBuild(t *testing.T) {
	for _, f := range handRunKitFindings(readFile(t, "../docs/deploy.md"), readFile(t, "../cloudbuild.yaml")) {
		t.Error(f)
	}
	// and the check sees each of those mistakes
	for name, doc := range map[string]string{
		"no grace": "```sh\ngcloud run services proxy x &\nfor i in $(seq 60); do curl -s -o /dev/null http://localhost:8081/healthz && break; sleep 1; done\ngo run . conformance --url http://localhost:8081\n```\n",
		"a sleep":  "```sh\ngcloud run services proxy x &\nsleep 3\ngo run . conformance --url http://localhost:8081 --backend-grace 1m\n```\n",
		"no kit":   "```sh\necho nothing\n```\n",
	} {
		if len(handRunKitFindings(doc, readFile(t, "../cloudbuild.yaml"))) == 0 {
			t.Errorf("a guide with %s passes", name)
		}
	}
}

func handRunKitFindings(doc, build string) []string {
	grace := regexp.MustCompile(`conformance [^\n]*(--backend-grace [0-9a-z]+)`).FindStringSubmatch(build)
	if grace == nil {
		return []string{"cloudbuild.yaml runs no conformance kit with --backend-grace"}
	}
	var findings []string
	kits := 0
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(doc, -1) {
		proxied, waited := false, false
		for _, line := range strings.Split(block[1], "\n") {
			switch {
			case strings.Contains(line, "gcloud run services proxy"):
				proxied = true
			case strings.Contains(line, "localhost:8081/healthz") && (strings.HasPrefix(line, "until ") || strings.Contains(line, "&& break")):
				waited = true
			case strings.Contains(line, " conformance --url"):
				kits++
				if !strings.Contains(line, grace[1]) {
					findings = append(findings, fmt.Sprintf("docs/deploy.md runs the kit without the build's %s: %q", grace[1], line))
				}
				if proxied && !waited {
					findings = append(findings, fmt.Sprintf("docs/deploy.md runs the kit behind the proxy without waiting for it to answer: %q", line))
				}
			}
		}
	}
	if kits == 0 {
		findings = append(findings, "docs/deploy.md runs no conformance kit")
	}
	return findings
}
