//go:build !linux

package worker

// testWorkerMain is the test binary's worker verb.
func testWorkerMain() int { return Main() }
