// Package guardmetrics exposes guarded runs (package guard) as Prometheus
// metrics, with github.com/prometheus/client_golang, for a program that
// runs many runs: runs by phase, the spend so far, and the pods' deletes
// by who deleted them and why. It is an adapter over guard's events and
// records: guard knows nothing of Prometheus.
//
// Give every run the same Metrics' options:
//
//	m := guardmetrics.New(prometheus.DefaultRegisterer)
//	run, err := guard.Launch(ctx, c, spec, guard.WithEvents(m.Observe), guard.WithSave(m.Save(saveRecord)))
//
// The metrics:
//
//	overbrainer_guard_runs{phase}                      runs seen, by the phase of their last record
//	overbrainer_guard_spend_usd                        the runs' estimated spend so far (price x time), summed
//	overbrainer_guard_billed_usd                       what Runpod billed the ended runs whose bill was read
//	overbrainer_guard_watchdog_deletes_total{reason}   pods seen deleted by their watchdog, by its rule
//	overbrainer_guard_pod_deletes_total{result}        deletes the runs made (deleted, terminated, stopped, failed)
//	overbrainer_guard_stall_warnings_total             times a followed job was told not moving (guard.EventStalled)
package guardmetrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// Metrics are the metrics of the runs given its options. Safe for
// concurrent use by many runs.
type Metrics struct {
	runs            *prometheus.GaugeVec
	spend, billed   prometheus.Gauge
	watchdogDeletes *prometheus.CounterVec
	podDeletes      *prometheus.CounterVec
	stalls          prometheus.Counter

	mu     sync.Mutex
	phase  map[string]guard.Phase // by run id
	spent  map[string]float64
	billOf map[string]float64
}

var phases = []guard.Phase{guard.PhaseCreating, guard.PhaseBooting, guard.PhaseRunning, guard.PhaseDetached, guard.PhaseDone,
	guard.PhaseFailed, guard.PhaseRemoved, guard.PhaseLeftToPod, guard.PhaseStopped, guard.PhaseUnknown}

// reasons are the watchdog's rules: a label takes one of these or
// "other", so that a pod's words cannot grow the series.
var reasons = []watchdog.DeleteReason{watchdog.DeleteBootstrapFailed, watchdog.DeletePodDirUnsafe, watchdog.DeleteCostCap,
	watchdog.DeleteDeadline, watchdog.DeleteMaxExtension, watchdog.DeleteRetrieved, watchdog.DeleteAbandoned, watchdog.DeleteNeverStarted,
	watchdog.DeleteKeptIdle, watchdog.DeleteStalled}

// New makes the metrics and registers them with reg (panicking, as
// prometheus.MustRegister does, when reg already holds them).
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		runs:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "overbrainer_guard_runs", Help: "Guarded runs seen, by the phase of their last record."}, []string{"phase"}),
		spend:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "overbrainer_guard_spend_usd", Help: "The runs' estimated spend so far (price x time since each create), summed."}),
		billed: prometheus.NewGauge(prometheus.GaugeOpts{Name: "overbrainer_guard_billed_usd", Help: "What Runpod billed the ended runs whose bill was read, summed."}),
		watchdogDeletes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "overbrainer_guard_watchdog_deletes_total",
			Help: "Pods seen deleted by their watchdog, by its rule."}, []string{"reason"}),
		podDeletes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "overbrainer_guard_pod_deletes_total",
			Help: "Deletes of a pod the runs made, by result (deleted, terminated, stopped: its storage still bills, failed)."}, []string{"result"}),
		stalls: prometheus.NewCounter(prometheus.CounterOpts{Name: "overbrainer_guard_stall_warnings_total",
			Help: "Times a followed job was told not moving: for the stall warning window (nothing deleted) or, with the stall rule on, its limit."}),
		phase: map[string]guard.Phase{}, spent: map[string]float64{}, billOf: map[string]float64{},
	}
	for _, p := range phases {
		m.runs.WithLabelValues(string(p))
	}
	for _, r := range reasons {
		m.watchdogDeletes.WithLabelValues(string(r))
	}
	for _, r := range []string{"deleted", "terminated", "stopped", "failed"} {
		m.podDeletes.WithLabelValues(r)
	}
	reg.MustRegister(m.runs, m.spend, m.billed, m.watchdogDeletes, m.podDeletes, m.stalls)
	return m
}

// Observe counts a run's event: give it to guard.WithEvents.
func (m *Metrics) Observe(e guard.Event) {
	switch e.Kind {
	case guard.EventWaiting, guard.EventCost:
		// A wait for capacity has no pod, hence no spend of its own: it
		// would zero a recovering run's.
		if e.RunID != "" && e.Stage != guard.StageCapacity {
			m.mu.Lock()
			m.spent[e.RunID] = e.CostUSD
			m.spend.Set(sum(m.spent))
			m.mu.Unlock()
		}
	case guard.EventDeleteReason:
		reason := "other"
		for _, r := range reasons {
			if e.DeleteReason == r {
				reason = string(r)
			}
		}
		m.watchdogDeletes.WithLabelValues(reason).Inc()
	case guard.EventDeleted:
		result := "failed"
		switch {
		case e.Err == nil && e.Result == runpod.Deleted:
			result = "deleted"
		case e.Err == nil && e.Result == runpod.Terminated:
			result = "terminated"
		case e.Result == runpod.Stopped:
			result = "stopped"
		}
		m.podDeletes.WithLabelValues(result).Inc()
	case guard.EventStalled:
		m.stalls.Inc()
	}
}

// Save returns a guard.WithSave function that notes each record's phase,
// spend and bill, then calls next (when not nil) to save it.
func (m *Metrics) Save(next func(guard.Record) error) func(guard.Record) error {
	return func(rec guard.Record) error {
		m.Record(rec)
		if next == nil {
			return nil
		}
		return next(rec)
	}
}

// Record notes a run's record: its phase, its spend once ended, its bill.
func (m *Metrics) Record(rec guard.Record) {
	if rec.ID == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.phase[rec.ID] = rec.Phase
	if !rec.Ended.IsZero() {
		m.spent[rec.ID] = rec.CostUSD
	}
	if rec.Bill != nil {
		m.billOf[rec.ID] = rec.Bill.USD
	}
	counts := map[guard.Phase]int{}
	for _, p := range m.phase {
		counts[p]++
	}
	for _, p := range phases {
		m.runs.WithLabelValues(string(p)).Set(float64(counts[p]))
		delete(counts, p)
	}
	// A phase of a newer guard: counted under unknown.
	for _, n := range counts {
		m.runs.WithLabelValues(string(guard.PhaseUnknown)).Add(float64(n))
	}
	m.spend.Set(sum(m.spent))
	m.billed.Set(sum(m.billOf))
}

func sum(m map[string]float64) float64 {
	var s float64
	for _, v := range m {
		s += v
	}
	return s
}
