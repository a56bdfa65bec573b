package deploy

import (
	"regexp"
	"strings"
	"testing"
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
