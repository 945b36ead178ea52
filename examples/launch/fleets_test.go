package main_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The fleet files cannot be run here (no container engine, cluster or
// systemd): this checks that each runs the launcher's sweep with flags the
// command has, and takes the key from where it says.
func TestFleetFilesNameTheSweep(t *testing.T) {
	t.Parallel()
	help := sweepHelp(t)
	root := filepath.Join("..", "..")
	for _, f := range []struct {
		path string
		want []string
	}{
		{"deploy/sweeper/Dockerfile", []string{"./examples/launch", `ENTRYPOINT ["/launch", "sweep"]`, "distroless"}},
		{"deploy/sweeper/cronjob.yaml", []string{"kind: CronJob", "name: RUNPOD_API_KEY", "secretKeyRef:", `args: ["--json"]`}},
		{"deploy/sweeper/overbrainer-sweep.service", []string{"ExecStart=/usr/local/bin/launch sweep --json", "EnvironmentFile="}},
		{"deploy/sweeper/overbrainer-sweep.timer", []string{"Unit=overbrainer-sweep.service", "OnUnitActiveSec="}},
		{"deploy/sweeper/deployment.yaml", []string{"kind: Deployment", "name: RUNPOD_API_KEY", "secretKeyRef:", `args: ["--every", "5m", "--metrics-addr", ":9090", "--json"]`, "prometheus.io/scrape"}},
		{"deploy/sweeper/overbrainer-sweep-metrics.service", []string{"ExecStart=/usr/local/bin/launch sweep --every 5m --metrics-addr 127.0.0.1:9090 --json", "EnvironmentFile=", "scrape_configs:"}},
		{".github/workflows/sweep.yml", []string{"schedule:", "go run ./examples/launch sweep --json", "secrets.RUNPOD_API_KEY"}},
		{"README.md", []string{"### Fleets", "deploy/sweeper/cronjob.yaml", "overbrainer-sweep.timer", ".github/workflows/sweep.yml", "deploy/sweeper/deployment.yaml", "overbrainer-sweep-metrics.service", "--metrics-addr"}},
	} {
		b, err := os.ReadFile(filepath.Join(root, f.path))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		mustContain(t, f.path, s, f.want...)
		// Every flag handed to the sweep (on a line that runs it, or
		// in the container's args) is one of its flags.
		for line := range strings.Lines(s) {
			if !strings.Contains(line, "sweep --") && !strings.Contains(line, "args: [") && !strings.HasPrefix(line, "CMD [") {
				continue
			}
			for _, m := range regexp.MustCompile(`--([a-z][a-z-]+)`).FindAllStringSubmatch(line, -1) {
				if !regexp.MustCompile(`(?m)^ +(-[a-z], )?--` + m[1] + `( |$)`).MatchString(help) {
					t.Errorf("%s passes --%s, which launch sweep does not take:\n%s", f.path, m[1], line)
				}
			}
		}
	}
}

// sweepHelp is the help of launch sweep (-h), which lists its flags.
func sweepHelp(t *testing.T) string {
	l := &local{t: t, stateDir: t.TempDir()}
	p := l.run("sweep", "-h")
	if p.code != 0 {
		t.Fatalf("sweep -h exit %d", p.code)
	}
	return p.stderr.String()
}
