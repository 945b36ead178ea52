package costplan_test

import (
	"fmt"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/costplan"
	"github.com/overbrainer/overbrainer-go/podenv"
)

// A $2 cap on a pod at $0.69 an hour, whose clock runs 3 s ahead: the job is
// asked to checkpoint 15 minutes before the money runs out.
func ExampleCostCap() {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	p, err := costplan.CostCap(podenv.Rules{MaxCostUSD: 2}, start, 0.69, 0, 3*time.Second)
	if err != nil {
		panic(err)
	}
	fmt.Println("snapshot at", time.Unix(p.SnapshotAt, 0).UTC().Format(time.TimeOnly))
	fmt.Println("cost cap at", time.Unix(p.CostCapAt, 0).UTC().Format(time.TimeOnly))
	// Output:
	// snapshot at 14:38:57
	// cost cap at 14:53:57
}

func ExampleGrow() {
	// 190e6 KiB = 194.6 GB, over 92% of the usable 188 GB of 200.
	fmt.Println(costplan.Grow(200, 190_000_000))
	// Output: 250 true
}
