// Package overbrainer is the root of the overbrainer-go SDK; see the package
// documentation of each subpackage.
package overbrainer
