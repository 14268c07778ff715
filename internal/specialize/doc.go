// Package specialize renders a variant of a kpt blueprint package for one
// target: it copies the blueprint, records where it came from in the Kptfile,
// writes the package context, injects in-cluster configuration, applies
// setters and runs the KRM function pipeline in process. Merge3 carries
// direct edits of a published variant over to the next render.
//
// Everything here is pure and deterministic: the same Request gives
// byte-identical files (sorted keys, stable YAML, no timestamps), so an
// unchanged variant publishes nothing. The package imports neither a
// Kubernetes client nor git; callers read the blueprint and write the result.
package specialize
