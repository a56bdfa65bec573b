// Package security holds the service's hostile-script battery:
// escape probes, resource exhaustion, prototype pollution across runs and the
// public proof-of-concept scripts of known QuickJS bugs, each run through the
// HTTP service on loopback with the real engine and asserted to end as its
// typed outcome within its deadline. It has no code of its own outside its
// tests; docs/security.md names the tests and what each proves.
package security
