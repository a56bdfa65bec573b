// Package worker runs guests in worker processes, never in the server.
//
// A worker is the service's own binary started with the hidden verb Verb. It
// holds the compiled engine (quickjs) and its pool of instances, starts
// with an empty environment and no descriptors but its channel to the server
// (fd 3, a socketpair) and a pipe for its log lines (fd 2), locks itself
// down (internal/lockdown) once the engine is compiled, and then serves one
// run at a time: script bytes, input and limits in, outcome and logs out,
// in frames private to this package. A run its caller named next
// (spi.RunRequest.Next) is sent with the run before it and waits in the
// worker until that one has answered (docs/spi.md, "A run named ahead").
//
// Pool is the server's side: an spi.Backend that keeps Concurrent +
// Spares workers warm and owns the hard kill. A run that has not answered one
// grace after its deadline gets the wall-clock limit and its worker SIGKILL;
// a spare takes the next run, and a successor starts in the background. The
// server's Go runtime never executes guest code, so a guest stuck in native
// code cannot stall its collector, its timers or its HTTP server.
// docs/hard-kill.md has the design and its figures.
package worker
