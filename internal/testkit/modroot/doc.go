// Package modroot finds this module's source tree, for the test helpers
// that read a file of another package (the OpenAPI document of
// runpodtest, the bootstrap's script).
//
// runtime.Caller cannot tell them where it is: under -trimpath, which CI
// builds with so that a clone in any directory shares one build cache, a
// file's name is its import path, not a path on disk. Tests run in their
// package's directory, inside the module, so the module is found from
// the working directory instead.
package modroot
