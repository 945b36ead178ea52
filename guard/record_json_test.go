package guard_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podenv"
)

// oldRecords are Records as the SDK saved them before its rules became
// one embedded type (podenv.Rules): a full one, and one of a hard deadline
// with every knob zero.
var oldRecords = []string{`{
  "id": "20260301-120000-a1b2",
  "api_url": "http://127.0.0.1:1/v2",
  "pod_name": "overbrainer-20260301-120000-a1b2",
  "pod_id": "pod1",
  "secret_name": "overbrainer_host_key_20260301-120000-a1b2",
  "secret_id": "sec1",
  "host_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFaKCIGTAorZfRm38a9XqitAU3FLqS55pVZdcKm+u+LV",
  "client_key": "-----BEGIN OPENSSH PRIVATE KEY-----\nx\n-----END OPENSSH PRIVATE KEY-----\n",
  "run_dir": "/workspace/overbrainer/20260301-120000-a1b2",
  "job_dir": "/home/me/job",
  "command": "python train.py",
  "deadline": "2026-03-01T16:00:00Z",
  "max_cost_usd": 12.5,
  "keep": true,
  "boot_grace": 1800000000000,
  "retrieve_grace": 3600000000000,
  "cost_per_hr": 0.69,
  "gpu": "NVIDIA GeForce RTX 4090",
  "billing_start": "2026-03-01T12:00:01Z",
  "interval": 90000000000,
  "lease_ttl": 1200000000000,
  "snapshot_wait": 600000000000,
  "max_extension": 7200000000000,
  "poll": 2000000000,
  "lease_every": 300000000000,
  "snapshot_lead": 900000000000,
  "phase": "running",
  "verdict": "ready",
  "log_offset": 1234,
  "exit_code": 0,
  "job_started": "2026-03-01T12:03:00Z"
}`, `{
  "id": "r2",
  "api_url": "",
  "pod_name": "",
  "secret_name": "",
  "host_key": "",
  "run_dir": "",
  "job_dir": "",
  "command": "",
  "boot_grace": 0,
  "retrieve_grace": 0,
  "hard_deadline": true,
  "poll": 0,
  "lease_every": 0,
  "snapshot_lead": 0,
  "phase": "detached",
  "log_offset": 0
}`}

// A Record saved before the rules were embedded loads with every value in
// place, and saves again with the same JSON names and values (new fields
// may be added, none renamed or lost).
func TestOldRecordsLoad(t *testing.T) {
	code := 0
	want := []guard.Record{{
		ID: "20260301-120000-a1b2", APIURL: "http://127.0.0.1:1/v2", PodName: "overbrainer-20260301-120000-a1b2", PodID: "pod1",
		SecretName: "overbrainer_host_key_20260301-120000-a1b2", SecretID: "sec1",
		HostKey:   "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFaKCIGTAorZfRm38a9XqitAU3FLqS55pVZdcKm+u+LV",
		ClientKey: "-----BEGIN OPENSSH PRIVATE KEY-----\nx\n-----END OPENSSH PRIVATE KEY-----\n",
		RunDir:    "/workspace/overbrainer/20260301-120000-a1b2", JobDir: "/home/me/job", Command: "python train.py",
		Plan: podenv.Plan{Rules: podenv.Rules{
			Deadline: time.Date(2026, 3, 1, 16, 0, 0, 0, time.UTC), MaxCostUSD: 12.5, Keep: true,
			BootGrace: 30 * time.Minute, RetrieveGrace: time.Hour,
			Interval: 90 * time.Second, LeaseTTL: 20 * time.Minute, SnapshotWait: 10 * time.Minute,
			MaxExtension: 2 * time.Hour, SnapshotLead: 15 * time.Minute,
		}},
		CostPerHr: 0.69, GPU: "NVIDIA GeForce RTX 4090",
		BillingStart: time.Date(2026, 3, 1, 12, 0, 1, 0, time.UTC),
		Poll:         2 * time.Second, LeaseEvery: 5 * time.Minute,
		Phase: guard.PhaseRunning, Verdict: "ready", LogOffset: 1234, ExitCode: &code,
		JobStarted: time.Date(2026, 3, 1, 12, 3, 0, 0, time.UTC),
	}, {
		ID: "r2", Plan: podenv.Plan{Rules: podenv.Rules{HardDeadline: true}}, Phase: guard.PhaseDetached,
	}}
	for i, old := range oldRecords {
		file := filepath.Join(t.TempDir(), "run.json")
		if err := os.WriteFile(file, []byte(old), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := guard.LoadRecord(file)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want[i], got); diff != "" {
			t.Errorf("record %d loads as (-want +got):\n%s", i, diff)
		}
		if err := got.Save(file); err != nil {
			t.Fatal(err)
		}
		var before, after map[string]any
		saved, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(old), &before); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(saved, &after); err != nil {
			t.Fatal(err)
		}
		for k, v := range before {
			if !cmp.Equal(v, after[k]) {
				t.Errorf("record %d: %q was %v, is saved as %v", i, k, v, after[k])
			}
		}
	}
}
