// Package deploy holds the offline checks of the deployment artifacts at the
// root of the repository: the Terraform module in terraform/ (its hardening
// properties, parsed with hashicorp/hcl/v2, and its canonical formatting), the
// Dockerfile (the final stage runs as non-root with the compilation cache set)
// and cloudbuild.yaml (every substitution it uses is defined). The checks live
// in the package's tests; each is also run against weakened copies of the
// artifacts, to prove it fails when a property is missing or weakened.
//
// image-smoke.sh, beside this file, is the smoke test the Dockerfile's build
// stage runs against the binary it built.
package deploy
