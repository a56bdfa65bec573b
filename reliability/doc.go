// Package reliability holds the service's reliability batteries:
// bad requests, store faults, lifecycle (disconnect, SIGTERM, panics),
// replayable runs, and load and soak. Everything runs on loopback, against the real binary (built
// once by the tests and started as a child process) or against the real
// service built in-process by service.New, the binary's own constructor.
// docs/reliability.md says what each battery proves, how CI runs it, and the
// command that produces the figures of the full runs.
//
// The package has no API; all of it is in its tests.
package reliability
