package launcher

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/overbrainer/overbrainer-go/sweep/sweepmetrics"
)

// serveMetrics serves a sweeper's metrics, and the process's own, at
// /metrics on addr, and has the API client's requests counted. It says
// the address it bound (addr's port may be 0). stop ends the server.
func (a *app) serveMetrics(addr string) (m *sweepmetrics.Metrics, stop func(), err error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, nil, usagef("--metrics-addr %s is not host:port (:9090 listens on every address)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, &exitError{code: ExitFailed, msg: fmt.Sprintf("--metrics-addr %s: %v", addr, err)}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m = sweepmetrics.New(reg)
	a.transport = m.RoundTripper(nil)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.say("sweep: metrics server: %v", err)
		}
	}()
	a.say("sweep: serving metrics on http://%s/metrics", ln.Addr())
	return m, func() { srv.Close() }, nil
}
