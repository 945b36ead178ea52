package runpod

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// billingAnswer is GET /v2/billing/pods's answer in the documented shape:
// two day buckets of pod p1 and one of p2.
const billingAnswer = `{
 "records": [
  {"startTime": "2026-06-01T00:00:00Z", "endTime": "2026-06-02T00:00:00Z", "podId": "p1",
   "totalAmount": 1.5, "gpuAmount": 1.25, "cpuAmount": 0, "diskAmount": 0.25},
  {"startTime": "2026-06-02T00:00:00Z", "endTime": "2026-06-03T00:00:00Z", "podId": "p1",
   "totalAmount": 0.5, "gpuAmount": 0.5, "cpuAmount": 0, "diskAmount": 0},
  {"startTime": "2026-06-01T00:00:00Z", "endTime": "2026-06-02T00:00:00Z", "podId": "p2",
   "totalAmount": 2, "gpuAmount": 2, "cpuAmount": 0, "diskAmount": 0}
 ],
 "metadata": {
  "query": {"startTime": "2026-06-01T00:00:00Z", "endTime": "2026-06-03T00:00:00Z", "bucketSize": "day", "podId": null},
  "recordCount": 3, "uniquePodCount": 2,
  "totals": {"totalAmount": 4, "gpuAmount": 3.75, "cpuAmount": 0, "diskAmount": 0.25}
 }
}`

func TestPodBilling(t *testing.T) {
	c, fs := setup(t)
	fs.handle("GET /billing/pods", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(billingAnswer))
	})
	day := func(d int) time.Time { return time.Date(2026, 6, d, 0, 0, 0, 0, time.UTC) }
	b, err := c.PodBilling(context.Background(), PodBillingOptions{Start: day(1), End: day(3), Bucket: BucketDay})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := url.ParseQuery(fs.last().query)
	want := url.Values{"startTime": {"2026-06-01T00:00:00Z"}, "endTime": {"2026-06-03T00:00:00Z"}, "bucketSize": {"day"}}
	if diff := cmp.Diff(want, q); diff != "" {
		t.Errorf("query (-want +got):\n%s", diff)
	}
	if b.Pods != 2 || b.Totals.TotalUSD != 4 || b.Totals.DiskUSD != 0.25 || !b.Start.Equal(day(1)) || !b.End.Equal(day(3)) {
		t.Errorf("metadata: %+v", b)
	}
	if len(b.Records) != 3 || b.Records[0].PodID != "p1" || !b.Records[0].End.Equal(day(2)) || b.Records[0].GPUUSD != 1.25 {
		t.Errorf("records: %+v", b.Records)
	}
	if usd, ok := b.Billed("p1"); !ok || usd != 2 {
		t.Errorf("Billed(p1) = %v, %v; want 2, true", usd, ok)
	}
	if usd, ok := b.Billed("p3"); ok || usd != 0 {
		t.Errorf("Billed(p3) = %v, %v; want 0, false", usd, ok)
	}

	// One pod, by the last buckets.
	if _, err := c.PodBilling(context.Background(), PodBillingOptions{PodID: "p1", LastN: 2, Bucket: BucketHour}); err != nil {
		t.Fatal(err)
	}
	q, _ = url.ParseQuery(fs.last().query)
	want = url.Values{"podId": {"p1"}, "lastN": {"2"}, "bucketSize": {"hour"}}
	if diff := cmp.Diff(want, q); diff != "" {
		t.Errorf("query (-want +got):\n%s", diff)
	}
}

func TestPodBillingRefusesBadOptions(t *testing.T) {
	c, fs := setup(t)
	now := time.Now()
	for _, o := range []PodBillingOptions{
		{Bucket: "minute"},
		{LastN: -1},
		{LastN: 3, Start: now},
		{Start: now, End: now.Add(-time.Hour)},
		{PodID: "../pods"},
	} {
		if _, err := c.PodBilling(context.Background(), o); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: err %v, want ErrInvalid", o, err)
		}
	}
	if n := len(fs.requests()); n != 0 {
		t.Errorf("%d requests sent for refused options", n)
	}
}

func TestListRegistries(t *testing.T) {
	c, fs := setup(t)
	fs.handle("GET /registries", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"registries": []map[string]string{{"id": "6n2k8v4d", "name": "dockerhub-private"}}})
	})
	regs, err := c.ListRegistries(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Registry{{ID: "6n2k8v4d", Name: "dockerhub-private"}}, regs); diff != "" {
		t.Errorf("registries (-want +got):\n%s", diff)
	}
}
