package sweepmetrics

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/overbrainer/overbrainer-go/sweep"
)

// Metrics are a sweeper's metrics, registered with one registry.
type Metrics struct {
	judged, deleted, pastBound *prometheus.CounterVec
	failures                   *prometheus.CounterVec
	secretsDeleted             prometheus.Counter
	cannotJudge, unmarked      prometheus.Gauge
	committed, unbounded       prometheus.Gauge
	cannotJudgeSecrets         prometheus.Gauge
	duration                   prometheus.Histogram
	passes                     *prometheus.CounterVec
	lastSuccess                prometheus.Gauge
	requests                   *prometheus.CounterVec
	apiErrors, rateLimited     prometheus.Counter
}

// rules are every pod rule, so that each series exists (at 0) from the
// start: a rate over a series that appears late misses its first rise.
var rules = []sweep.Rule{sweep.RuleKeep, sweep.RuleExited, sweep.RuleNeverRan, sweep.RuleDeadline,
	sweep.RuleCostCap, sweep.RuleUnmarked, sweep.RuleCannotJudge}

// New makes the metrics and registers them with reg; it panics, as
// prometheus.MustRegister does, when reg already holds them.
func New(reg prometheus.Registerer) *Metrics {
	f := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	m := &Metrics{
		judged:         f("overbrainer_sweep_pods_judged_total", "Pods judged by the sweeper, by the rule that decided.", "rule"),
		deleted:        f("overbrainer_sweep_pods_deleted_total", "Pods the sweeper deleted, by rule.", "rule"),
		pastBound:      f("overbrainer_sweep_past_bound_usd_total", "Dollars the pods the sweeper deleted billed past their rule's bound (price x time), by rule.", "rule"),
		failures:       f("overbrainer_sweep_delete_failures_total", "Deletes that failed, or only stopped a pod whose storage still bills, by kind (pod, secret).", "kind"),
		secretsDeleted: prometheus.NewCounter(prometheus.CounterOpts{Name: "overbrainer_sweep_secrets_deleted_total", Help: "Host-key secrets the sweeper deleted."}),
		cannotJudge:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "overbrainer_sweep_cannot_judge_pods", Help: "Pods the last pass could not judge (a field missing, unreadable or unknown): left for a person."}),
		cannotJudgeSecrets: prometheus.NewGauge(prometheus.GaugeOpts{Name: "overbrainer_sweep_cannot_judge_secrets",
			Help: "Host-key secrets the last pass could not judge (how long their run needs them unknown): left for a person."}),
		unmarked: prometheus.NewGauge(prometheus.GaugeOpts{Name: "overbrainer_sweep_unmarked_pods", Help: "Pods named like a guarded run's without its run marker, in the last pass: left."}),
		committed: prometheus.NewGauge(prometheus.GaugeOpts{Name: "overbrainer_sweep_committed_usd",
			Help: "What the account's guarded pods may still spend by their own rules (each one's worst case left), summed, in the last pass."}),
		unbounded: prometheus.NewGauge(prometheus.GaugeOpts{Name: "overbrainer_sweep_unbounded_pods",
			Help: "Guarded pods whose spend nothing bounds (kept and running, or not judged), in the last pass: not in the committed sum."}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "overbrainer_sweep_duration_seconds", Help: "How long a sweep pass took.",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}}),
		passes:      f("overbrainer_sweep_passes_total", "Sweep passes, by result (ok, error).", "result"),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{Name: "overbrainer_sweep_last_success_timestamp_seconds", Help: "When the last pass without an error started, in Unix seconds."}),
		requests:    f("overbrainer_runpod_requests_total", "Runpod API requests (each attempt), by HTTP status; error when no answer came.", "code"),
		apiErrors:   prometheus.NewCounter(prometheus.CounterOpts{Name: "overbrainer_runpod_api_errors_total", Help: "Runpod API requests answered 4xx or 5xx, or not answered."}),
		rateLimited: prometheus.NewCounter(prometheus.CounterOpts{Name: "overbrainer_runpod_rate_limited_total", Help: "Runpod API requests answered 429 (rate limited)."}),
	}
	for _, r := range rules {
		m.judged.WithLabelValues(r.String())
		if r != sweep.RuleKeep && r != sweep.RuleUnmarked && r != sweep.RuleCannotJudge {
			m.deleted.WithLabelValues(r.String())
			m.pastBound.WithLabelValues(r.String())
		}
	}
	for _, k := range []string{"pod", "secret"} {
		m.failures.WithLabelValues(k)
	}
	for _, r := range []string{"ok", "error"} {
		m.passes.WithLabelValues(r)
	}
	reg.MustRegister(m.judged, m.deleted, m.pastBound, m.failures, m.secretsDeleted, m.cannotJudge, m.unmarked, m.committed, m.unbounded,
		m.cannotJudgeSecrets, m.duration, m.passes, m.lastSuccess, m.requests, m.apiErrors, m.rateLimited)
	return m
}

// Observe counts one pass: its Report and its error, as sweep.Once or
// sweep.Every's callback give them. A pass whose pod listing failed
// (no pod judged) counts as an error and changes no gauge of the pods.
func (m *Metrics) Observe(rep sweep.Report, err error) {
	m.duration.Observe(rep.Pass.Took.Seconds())
	if err != nil {
		m.passes.WithLabelValues("error").Inc()
	} else {
		m.passes.WithLabelValues("ok").Inc()
		if !rep.Pass.Start.IsZero() {
			m.lastSuccess.Set(float64(rep.Pass.Start.UnixNano()) / 1e9)
		}
	}
	if rep.Pods == 0 && err != nil {
		return
	}
	var cannot, unmarked, cannotSecrets int
	for _, d := range rep.Decisions {
		if d.Secret != "" {
			switch {
			case d.Rule == sweep.RuleCannotJudge:
				cannotSecrets++
			case d.Deleted():
				m.secretsDeleted.Inc()
			case d.Done:
				m.failures.WithLabelValues("secret").Inc()
			}
			continue
		}
		rule := d.Rule.String()
		m.judged.WithLabelValues(rule).Inc()
		switch d.Rule {
		case sweep.RuleCannotJudge:
			cannot++
		case sweep.RuleUnmarked:
			unmarked++
		}
		switch {
		case d.Deleted():
			m.deleted.WithLabelValues(rule).Inc()
			m.pastBound.WithLabelValues(rule).Add(d.PastBoundUSD())
		case d.Done:
			m.failures.WithLabelValues("pod").Inc()
		}
	}
	usd, unbounded := rep.Committed()
	m.committed.Set(usd)
	m.unbounded.Set(float64(len(unbounded)))
	m.cannotJudge.Set(float64(cannot))
	m.unmarked.Set(float64(unmarked))
	m.cannotJudgeSecrets.Set(float64(cannotSecrets))
}

// RoundTripper wraps next (http.DefaultTransport when nil) to count the
// Runpod client's requests by status: its API errors and its 429s. It
// reads the status only, never a header or a body.
func (m *Metrics) RoundTripper(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripper{m: m, next: next}
}

type roundTripper struct {
	m    *Metrics
	next http.RoundTripper
}

func (t roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	t.m.requests.WithLabelValues(code).Inc()
	if err != nil || resp.StatusCode >= 400 {
		t.m.apiErrors.Inc()
	}
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		t.m.rateLimited.Inc()
	}
	return resp, err
}
