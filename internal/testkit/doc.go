// Package testkit holds, in its subpackages, the kits this module's tests
// are built with; nothing here ships:
//
//   - checkedfake: the fake Runpod with every exchange held to the OpenAPI
//     document;
//   - openapicheck: the OpenAPI validator checkedfake and the client's
//     tests use;
//   - scrape: reads a Prometheus endpoint the way Prometheus does;
//   - modroot: finds the module's source tree from a test's directory;
//   - chaos: the suite that drives the real parts under faults, load and
//     hostile input.
//
// No package that ships (a library package, or a program under examples/)
// may import a package under testkit, in its non-test files: the kits
// link testing and the validator's dependencies. A package here may import
// anything in the module. The module root's layers_test.go holds every
// package to that, and to the floors of the layout. internal/shtest is a
// test kit too, but stays where the design card places it.
package testkit
