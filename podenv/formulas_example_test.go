package podenv_test

import (
	"fmt"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
)

// A zero MaxExtension is the default hour; a hard deadline has none.
func ExampleRules_Extension() {
	fmt.Println(podenv.Rules{}.Extension())
	fmt.Println(podenv.Rules{MaxExtension: 3 * time.Hour}.Extension())
	fmt.Println(podenv.Rules{HardDeadline: true}.Extension())
	// Output:
	// 1h0m0s
	// 3h0m0s
	// 0s
}

// The watchdog deletes the pod at the deadline plus its extension,
// whatever the lease, counting whole seconds.
func ExampleRules_HardEnd() {
	r := podenv.Rules{Deadline: time.Date(2026, 3, 1, 16, 0, 0, 0, time.UTC), MaxExtension: 90*time.Minute + time.Millisecond}
	fmt.Println(r.HardEnd().UTC().Format(time.DateTime))
	fmt.Println(podenv.Rules{}.HardEnd().IsZero())
	// Output:
	// 2026-03-01 17:30:01
	// true
}

// A $10 cap of which an earlier pod of the run spent $4: the new pod, at
// $1.50 an hour, may bill for 4 hours; its job is asked for a snapshot
// 15 minutes (the default lead) before.
func ExampleRules_CapAt() {
	r := podenv.Rules{MaxCostUSD: 10}
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	capAt := r.CapAt(start, 1.5, 4)
	fmt.Println("left:", r.MoneyLeft(4))
	fmt.Println("cap at:", capAt.Format(time.TimeOnly))
	fmt.Println("asked at:", r.CostAskAt(start, capAt).Format(time.TimeOnly))
	// Output:
	// left: 6
	// cap at: 16:00:00
	// asked at: 15:45:00
}

// A stalled job asked for its snapshot at 12:00 that does not move: its
// pod goes a SnapshotWait (here the default 15 minutes) later.
func ExampleRules_StallEnd() {
	asked := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	fmt.Println(podenv.Rules{StallAfter: time.Hour}.StallEnd(asked).Format(time.TimeOnly))
	// Output: 12:15:00
}

// What is left of the cap once the run's pods spent part of it; more
// than the cap spent leaves nothing, and no cap never runs out.
func ExampleRules_MoneyLeft() {
	r := podenv.Rules{MaxCostUSD: 5}
	fmt.Println(r.MoneyLeft(1.25), r.MoneyLeft(7), podenv.Rules{}.MoneyLeft(7))
	// Output: 3.75 0 +Inf
}
