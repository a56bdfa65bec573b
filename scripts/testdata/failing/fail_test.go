// Package failing holds a test that always fails, for
// scripts/test-under-load-check.sh to prove that scripts/test-under-load.sh
// reports a failing test command. Under testdata, ./... never runs it.
package failing

import "testing"

func TestAlwaysFails(t *testing.T) {
	t.Fatal("this test always fails")
}
