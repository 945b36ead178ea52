// Package chaos is the test suite that holds the SDK to its promise, that a
// pod is never forgotten and left billing, under faults, load and hostile
// input. It has no code of its own: everything is in its tests, which drive
// the real parts (the bootstrap, the watchdog under real shells, the
// launcher binary, runpodtest's fake Runpod with its pod runner) and print
// their figures.
//
//	go test ./internal/chaos -run Chaos -v
//
// prints one line per figure (t.Log) and, at the end, a summary table:
//
//   - the fault matrix: a launch killed (SIGKILL) at each step, and the API
//     failing at each step (5xx, 429 with Retry-After, hang, dropped
//     connection); cells tried, pods left running (must be 0), the worst
//     delay past the rule's bound, the dollars billed past it;
//   - load: 50 pods created at once through 20% of 429 answers (requests
//     sent, total wait), and 50 watchdogs on one machine whose cost caps
//     all fire on time (worst delay);
//   - secrets: how many process command lines, environments, files, logs
//     and error strings were sampled for the keys and tokens (zero hits);
//   - hostile pod files and a pod clock 10 minutes off the client's: the
//     delay of the cost cap past its time.
//
// Every timed assertion is the rule's own bound plus a slack for a loaded
// 2-core machine (Slack in the tests), and each rule a cell relies on is
// named: the test checks the watchdog's delete_reason, and a mutation test
// removes the rule from the script to show the cell then fails.
package chaos
