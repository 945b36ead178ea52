package runpodtest

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// billSpan is a closed interval a pod billed: RUNNING at its price
// (running), or stopped with a persistent volume, billing the volume.
type billSpan struct {
	from, to time.Time
	running  bool
}

// The JSON shapes of GET /v2/billing/pods (ListPodBillingResponse).
type wireBillingAmounts struct {
	Total float64 `json:"totalAmount"`
	GPU   float64 `json:"gpuAmount"`
	CPU   float64 `json:"cpuAmount"`
	Disk  float64 `json:"diskAmount"`
}

type wirePodBillingRecord struct {
	Start string `json:"startTime"`
	End   string `json:"endTime"`
	PodID string `json:"podId"`
	wireBillingAmounts
}

type wirePodBilling struct {
	Records  []wirePodBillingRecord `json:"records"`
	Metadata struct {
		Query struct {
			Start  string  `json:"startTime"`
			End    string  `json:"endTime"`
			Bucket string  `json:"bucketSize"`
			PodID  *string `json:"podId"`
		} `json:"query"`
		RecordCount    int                `json:"recordCount"`
		UniquePodCount int                `json:"uniquePodCount"`
		Totals         wireBillingAmounts `json:"totals"`
	} `json:"metadata"`
}

// SetBillingDelay changes WithBillingDelay's lag while the fake serves.
func (s *Server) SetBillingDelay(d time.Duration) {
	s.mu.Lock()
	s.cfg.billingDelay = d
	s.mu.Unlock()
}

// floorBucket is the start of the bucket t falls in, in UTC; weeks start
// on Monday.
func floorBucket(t time.Time, bucket string) time.Time {
	t = t.UTC()
	y, m, d := t.Date()
	switch bucket {
	case "hour":
		return t.Truncate(time.Hour)
	case "week":
		day := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
		return day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7))
	case "month":
		return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	case "year":
		return time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// nextBucket is the start of the bucket after the one starting at t.
func nextBucket(t time.Time, bucket string) time.Time {
	switch bucket {
	case "hour":
		return t.Add(time.Hour)
	case "week":
		return t.AddDate(0, 0, 7)
	case "month":
		return t.AddDate(0, 1, 0)
	case "year":
		return t.AddDate(1, 0, 0)
	}
	return t.AddDate(0, 0, 1)
}

// maxBuckets bounds the buckets one answer spans, pods aside.
const maxBuckets = 20000

// podBilling serves GET /v2/billing/pods: each pod's billed use, cut into
// the query's buckets, as the fake measures it (Pod.Bill), less what the
// billing delay has not reached yet.
func (s *Server) podBilling(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	bucket := q.Get("bucketSize")
	switch bucket {
	case "":
		bucket = "day"
	case "hour", "day", "week", "month", "year":
	default:
		writeProblem(w, http.StatusBadRequest, "bucketSize must be hour, day, week, month or year")
		return
	}
	now := s.cfg.now().UTC()
	var start, end time.Time
	for _, p := range []struct {
		name string
		t    *time.Time
	}{{"startTime", &start}, {"endTime", &end}} {
		if v := q.Get(p.name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				writeProblem(w, http.StatusBadRequest, p.name+" is not an RFC 3339 time")
				return
			}
			*p.t = t
		}
	}
	if v := q.Get("lastN"); v != "" {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil || n < 1:
			writeProblem(w, http.StatusBadRequest, "lastN must be an integer of at least 1")
			return
		case !start.IsZero() || !end.IsZero():
			writeProblem(w, http.StatusBadRequest, "lastN and startTime/endTime are mutually exclusive")
			return
		case n > maxBuckets:
			writeProblem(w, http.StatusBadRequest, fmt.Sprintf("at most %d buckets", maxBuckets))
			return
		}
		end = nextBucket(floorBucket(now, bucket), bucket)
		start = end
		for range n {
			start = floorBucket(start.Add(-time.Nanosecond), bucket)
		}
	}
	if start.IsZero() {
		start = now.AddDate(0, 0, -30)
	}
	if end.IsZero() {
		end = now
	}
	start = floorBucket(start, bucket)
	if f := floorBucket(end, bucket); !f.Equal(end.UTC()) {
		end = nextBucket(f, bucket)
	}
	if !end.After(start) {
		writeProblem(w, http.StatusBadRequest, "endTime must be after startTime")
		return
	}
	var buckets []time.Time
	for t := start; t.Before(end); t = nextBucket(t, bucket) {
		if len(buckets) == maxBuckets {
			writeProblem(w, http.StatusBadRequest, fmt.Sprintf("at most %d buckets", maxBuckets))
			return
		}
		buckets = append(buckets, t)
	}

	var out wirePodBilling
	out.Metadata.Query.Start, out.Metadata.Query.End, out.Metadata.Query.Bucket = rfc3339(start), rfc3339(end), bucket
	podID := q.Get("podId")
	if podID != "" {
		out.Metadata.Query.PodID = &podID
	}
	out.Records = []wirePodBillingRecord{}
	s.mu.Lock()
	// Use after this is not billed yet.
	billedTo := now.Add(-s.cfg.billingDelay)
	for _, id := range s.order {
		p := s.pods[id]
		if podID != "" && id != podID {
			continue
		}
		s.refreshLocked(p, now)
		spans := p.openSpans(now)
		billed := false
		for _, b := range buckets {
			to := earlier(nextBucket(b, bucket), billedTo)
			var rec wirePodBillingRecord
			hit := false
			for _, sp := range spans {
				from, until := later(sp.from, b), earlier(sp.to, to)
				if !until.After(from) {
					continue
				}
				hit = true
				hours := until.Sub(from).Hours()
				switch {
				case !sp.running:
					rec.Disk += hours * float64(p.persistentGB) * s.cfg.volumeRate / hoursPerMonth
				case p.gpuID != "":
					rec.GPU += hours * p.costPerHr
				default:
					rec.CPU += hours * p.costPerHr
				}
			}
			if !hit {
				continue
			}
			rec.Total = rec.GPU + rec.CPU + rec.Disk
			rec.Start, rec.End, rec.PodID = rfc3339(b), rfc3339(nextBucket(b, bucket)), id
			out.Records = append(out.Records, rec)
			t := &out.Metadata.Totals
			t.Total, t.GPU, t.CPU, t.Disk = t.Total+rec.Total, t.GPU+rec.GPU, t.CPU+rec.CPU, t.Disk+rec.Disk
			billed = true
		}
		if billed {
			out.Metadata.UniquePodCount++
		}
	}
	s.mu.Unlock()
	out.Metadata.RecordCount = len(out.Records)
	writeJSON(w, http.StatusOK, out)
}

// openSpans is the pod's billed intervals, the open one cut at now.
func (p *pod) openSpans(now time.Time) []billSpan {
	spans := append([]billSpan(nil), p.spans...)
	if !p.runningSince.IsZero() && now.After(p.runningSince) {
		spans = append(spans, billSpan{from: p.runningSince, to: now, running: true})
	}
	if !p.stoppedSince.IsZero() && now.After(p.stoppedSince) {
		spans = append(spans, billSpan{from: p.stoppedSince, to: now})
	}
	return spans
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
