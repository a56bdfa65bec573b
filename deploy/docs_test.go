package deploy

import (
	"strings"
	"testing"
)

// TestDeployGuide: docs/deploy.md walks through each step of a first
// deployment that issue #6 lists, with the commands that do it.
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
	}
	for _, s := range steps {
		if !strings.Contains(doc, s.needle) {
			t.Errorf("docs/deploy.md does not show how to %s (%q)", s.what, s.needle)
		}
	}
}
