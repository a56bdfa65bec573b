// Package deploy holds the offline checks of the deployment artifacts at the
// root of the repository. The Terraform module in terraform/ is checked by the
// real tool: tofu-check.sh, beside this file, runs tofu validate, fmt -check
// and test (terraform/tests, with a mock provider) on the module and its
// examples, and tofu-check-selftest.sh runs it on broken copies of the module
// to show that each of those steps fails when it should. The package's tests
// check what tofu cannot: that every resource of the module is named by a tofu
// test and its grants are exactly the ones intended, that variables and
// outputs are documented, that docs/deploy.md and terraform/examples/basic
// agree, and that every message and field the module's log filters read is
// one the service writes (logs_test.go, over a reader of OpenTofu's syntax,
// hcl_test.go, and against renames on either side); and the Dockerfile (the final stage runs as non-root with the
// compilation cache set) and cloudbuild.yaml (every substitution it uses is
// defined; the new revision is deployed without traffic, checked by the
// conformance kit, and only then routed to), each check also run against
// weakened copies of the artifact, to prove it fails when a property is
// missing or weakened. rollout_test.go runs cloudbuild.yaml's rollout steps
// themselves, with a stub gcloud and the real kit against the real service
// and against a broken one.
//
// image-smoke.sh, beside this file, is the smoke test the Dockerfile's build
// stage runs against the binary it built. image-test.sh builds the Dockerfile
// itself with podman (on a local stand-in for its golang base image, made
// from Debian's packages and the Go toolchain of the module proxy) and runs
// the image as Cloud Run runs it; image-test-selftest.sh shows that each of
// its checks fails on a wrong expectation or a weakened run.
package deploy
