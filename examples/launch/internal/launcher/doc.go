// Package launcher is the examples/launch program: a command line over
// package guard. It turns flags into a guard.Spec, guard's events into its
// "launch: ..." lines (explaining every watchdog delete reason and bootstrap
// failure in reasons.go), runs into the state directory (run.json is guard's
// Record plus the launcher's own fields), and a run's end into its exit
// status; and it adds the commands around a run: attach, stop, cancel,
// ssh, ls, rm and local-server.
//
// main.go only calls Main, so that tests can drive the built binary and
// read the same code.
package launcher
