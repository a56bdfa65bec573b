// Package contentstore stores and reads scripts by their content address
// (docs/spi.md, "Scripts"): a script is named by the SHA-256 of its bytes, so
// a repaired script is a new reference, never a mutation.
//
// A [contentref.Ref] is the parsed form of "sha256:<64 lowercase hex
// digits>"; every store keeps the bytes of a reference under the object name
// <prefix>sha256/<hex> ([contentref.Ref.ObjectName]). Two stores here implement
// [Store], and package gcsstore a third (Google Cloud Storage,
// gs://bucket/optional/prefix), kept apart so that this package links no GCS
// client and no gRPC:
//
//   - [DirStore], a local directory (file:///path or a plain path), the
//     default on a laptop. Its writes go through the object layer's
//     objects.Dir, whole: a crash never leaves a partial script under a
//     valid name.
//   - [MemStore], in memory, for tests and one-shot commands.
//
// [Open] picks one from a URL, parsed by objects.Parse (gcsstore.Open also
// takes gs:// URLs). Every Get checks the object's size before
// reading it, reads through a limit, and verifies that the bytes hash to the
// reference; bytes that do not are never returned. Failures are reported
// with contentref's sentinels, tested with errors.Is:
// [contentref.ErrNotFound] is the effect's scriptMissing, everything else is
// infrastructure.
//
// [Cache] wraps any Store with a bounded LRU of verified bytes, shares one
// fetch among concurrent readers of the same reference, and runs no script
// it holds past a bound without the store's word that the script is still
// there ([Store.Exists]). [PutFiles] is the "put" verb of the service
// binary.
package contentstore
