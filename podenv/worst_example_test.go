package podenv_test

import (
	"fmt"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
)

// The worst case of a run of 4 hours and the default extension, at
// $0.69/h, with a sweeper every 10 minutes, its margin 5.
func ExampleRules_WorstCase() {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r := podenv.Rules{Deadline: start.Add(4 * time.Hour)}
	w := r.WorstCase(0.69, start, &podenv.Sweeper{Every: 10 * time.Minute, Margin: 5 * time.Minute})
	for _, b := range []struct {
		who string
		b   podenv.Bound
	}{{"following", w.Follow}, {"watchdog alone", w.Watchdog}, {"sweeper alone", w.Sweeper}} {
		fmt.Printf("%s: $%.3f in %s\n", b.who, b.b.USD, b.b.For)
	}
	left, _ := w.Guarded().Left(w.CostPerHr, start, start.Add(4*time.Hour))
	fmt.Printf("left after 4h: $%.3f\n", left)
	// Output:
	// following: $3.467 in 5h1m30s
	// watchdog alone: $3.461 in 5h1m0s
	// sweeper alone: $3.622 in 5h15m0s
	// left after 4h: $0.707
}
