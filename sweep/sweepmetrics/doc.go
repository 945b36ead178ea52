// Package sweepmetrics exposes a sweeper's passes (package sweep) as
// Prometheus metrics, with github.com/prometheus/client_golang. It is an
// adapter: sweep knows nothing of Prometheus, and a program that does not
// want metrics does not link it.
//
// Give each pass's Report to Metrics.Observe (sweep.Every's callback),
// and send the Runpod client's requests through Metrics.RoundTripper
// (runpod.WithHTTPClient) to count its API errors and 429s:
//
//	reg := prometheus.NewRegistry()
//	m := sweepmetrics.New(reg)
//	hc := &http.Client{Timeout: runpod.DefaultTimeout, Transport: m.RoundTripper(http.DefaultTransport)}
//	c, _ := runpod.New(key, runpod.WithHTTPClient(hc))
//	go http.ListenAndServe(":9090", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//	sweep.Every(ctx, c, sweep.Policy{}, 5*time.Minute, func(rep sweep.Report, err error) {
//		m.Observe(rep, err)
//	})
//
// The metrics (all prefixed overbrainer_sweep_ but the API's):
//
//	overbrainer_sweep_pods_judged_total{rule}          pods judged, by the rule that decided
//	overbrainer_sweep_pods_deleted_total{rule}         pods deleted (the delete worked), by rule
//	overbrainer_sweep_delete_failures_total{kind}      deletes that failed or only stopped the pod (kind pod or secret)
//	overbrainer_sweep_secrets_deleted_total            host-key secrets deleted
//	overbrainer_sweep_cannot_judge_pods                pods the last pass could not judge (left, for a person)
//	overbrainer_sweep_cannot_judge_secrets             host-key secrets the last pass could not judge (left, for a person)
//	overbrainer_sweep_unmarked_pods                    overbrainer- pods without the run marker in the last pass
//	overbrainer_sweep_committed_usd                    what the guarded pods may still spend by their own rules, summed (last pass)
//	overbrainer_sweep_unbounded_pods                   guarded pods nothing bounds (kept and running, or not judged): not in that sum
//	overbrainer_sweep_past_bound_usd_total{rule}       dollars deleted pods had billed past their rule's bound
//	overbrainer_sweep_duration_seconds                 histogram of the passes' durations
//	overbrainer_sweep_passes_total{result}             passes, by result (ok or error)
//	overbrainer_sweep_last_success_timestamp_seconds   when the last pass without error started
//	overbrainer_runpod_requests_total{code}            API requests by HTTP status ("error": no answer)
//	overbrainer_runpod_api_errors_total                API requests answered 4xx or 5xx, or not answered
//	overbrainer_runpod_rate_limited_total              API requests answered 429
package sweepmetrics
