package runpod

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// BillingBucket is the length of one billing record's time bucket.
type BillingBucket string

// The bucket sizes of GET /v2/billing/pods; an empty one is Runpod's
// default, BucketDay.
const (
	BucketHour  BillingBucket = "hour"
	BucketDay   BillingBucket = "day"
	BucketWeek  BillingBucket = "week"
	BucketMonth BillingBucket = "month"
	BucketYear  BillingBucket = "year"
)

// PodBillingOptions narrow PodBilling. Start and End (either may be zero:
// Runpod's defaults are 30 days ago and now) and LastN are exclusive.
// Runpod widens the window to whole buckets.
type PodBillingOptions struct {
	// PodID, when set, keeps the records of that pod only.
	PodID  string
	Start  time.Time
	End    time.Time
	Bucket BillingBucket
	// LastN asks for the last N buckets, the current one included.
	LastN int
}

// BillingAmounts are what Runpod billed, in USD: the total and its parts.
type BillingAmounts struct {
	TotalUSD float64 `json:"totalAmount"`
	GPUUSD   float64 `json:"gpuAmount"`
	CPUUSD   float64 `json:"cpuAmount"`
	DiskUSD  float64 `json:"diskAmount"`
}

// PodBillingRecord is what one pod was billed in one time bucket
// [Start, End).
type PodBillingRecord struct {
	PodID string    `json:"podId"`
	Start time.Time `json:"startTime"`
	End   time.Time `json:"endTime"`
	BillingAmounts
}

// PodBilling is the answer of GET /v2/billing/pods: one record per pod per
// bucket, and the totals over them. A pod Runpod has not billed yet (its
// billing lags its use) has no record.
type PodBilling struct {
	Records []PodBillingRecord
	Totals  BillingAmounts
	// Start and End are the window Runpod resolved; Pods the distinct
	// pods of the records.
	Start, End time.Time
	Pods       int
}

// PodBilling reads Runpod's billing of the account's pods (or of one pod).
func (c *Client) PodBilling(ctx context.Context, opts PodBillingOptions) (*PodBilling, error) {
	q := url.Values{}
	if opts.PodID != "" {
		if err := checkID("PodBilling", "pod", opts.PodID); err != nil {
			return nil, err
		}
		q.Set("podId", opts.PodID)
	}
	switch opts.Bucket {
	case "":
	case BucketHour, BucketDay, BucketWeek, BucketMonth, BucketYear:
		q.Set("bucketSize", string(opts.Bucket))
	default:
		return nil, invalidf("PodBilling: bucket %q is not hour, day, week, month or year", opts.Bucket)
	}
	switch {
	case opts.LastN < 0:
		return nil, invalidf("PodBilling: LastN %d is negative", opts.LastN)
	case opts.LastN > 0 && !(opts.Start.IsZero() && opts.End.IsZero()):
		return nil, invalidf("PodBilling: LastN and Start or End are exclusive")
	case opts.LastN > 0:
		q.Set("lastN", strconv.Itoa(opts.LastN))
	}
	if !opts.Start.IsZero() && !opts.End.IsZero() && !opts.End.After(opts.Start) {
		return nil, invalidf("PodBilling: End %s is not after Start %s", opts.End.Format(time.RFC3339), opts.Start.Format(time.RFC3339))
	}
	if !opts.Start.IsZero() {
		q.Set("startTime", opts.Start.UTC().Format(time.RFC3339))
	}
	if !opts.End.IsZero() {
		q.Set("endTime", opts.End.UTC().Format(time.RFC3339))
	}
	r := &call{method: http.MethodGet, path: "/billing/pods", query: q}
	resp, err := c.do(ctx, r, true)
	if err != nil {
		return nil, err
	}
	var out struct {
		Records  []PodBillingRecord `json:"records"`
		Metadata struct {
			Query struct {
				Start time.Time `json:"startTime"`
				End   time.Time `json:"endTime"`
			} `json:"query"`
			UniquePodCount int            `json:"uniquePodCount"`
			Totals         BillingAmounts `json:"totals"`
		} `json:"metadata"`
	}
	if err := decode(r, resp, &out); err != nil {
		return nil, err
	}
	return &PodBilling{
		Records: out.Records, Totals: out.Metadata.Totals,
		Start: out.Metadata.Query.Start, End: out.Metadata.Query.End,
		Pods: out.Metadata.UniquePodCount,
	}, nil
}

// Billed sums the records of pod id; ok is false when there is none (Runpod
// has not billed it yet, or never will).
func (b *PodBilling) Billed(id string) (usd float64, ok bool) {
	for _, r := range b.Records {
		if r.PodID == id {
			usd += r.TotalUSD
			ok = true
		}
	}
	return usd, ok
}
