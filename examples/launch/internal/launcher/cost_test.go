package launcher

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/guard"
)

// After a recovery the cost line's arithmetic holds: the total is this
// pod's price x time plus what the lost pod before it cost, each said.
func TestCostLineAfterARecovery(t *testing.T) {
	var errOut bytes.Buffer
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &state.Run{Record: guard.Record{
		ID: "r1", CostPerHr: 0.69, BillingStart: start, Ended: start.Add(24 * time.Second),
		CostUSD:  0.0046 + 0.0044,
		Attempts: []guard.Attempt{{GPU: "x", Outcome: guard.OutcomeCreated, PodID: "lost", CostUSD: 0.0044}, {GPU: "x", Outcome: guard.OutcomeCreated, PodID: "new"}},
	}}
	d := &driver{a: &app{stderr: &errOut}, r: r}
	d.printCost()
	line, _, _ := strings.Cut(errOut.String(), "\n")
	want := "launch: cost: ~$0.0090 (this pod ~$0.0046: $0.690/h x 24s from its create call to its delete; the 1 lost pod before it ~$0.0044;"
	if !strings.HasPrefix(line, want) {
		t.Errorf("cost line\n%s\nwant it to start\n%s", line, want)
	}
}
