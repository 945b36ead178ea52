package launcher

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/overbrainer/overbrainer-go/doctor"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
)

func cmdDoctor(ctx context.Context, a *app, args []string) error {
	fs := a.newFlags("doctor", "", `Proves, in at most --timeout and a few cents, what runs rely on: the key
lists pods, GPU types, secrets, registries, network volumes and billing, each
decoded by this SDK (a member it does not know is drift: a warning); the
API's live OpenAPI text holds what this SDK calls as our copy does; a
secret named as a run's host key (a dash in it) with a description comes
back byte for byte, is updated and deleted; and a pod (a CPU pod where the
API offers one, else the cheapest GPU in stock), made as run makes one (the
real bootstrap, watchdog and env), comes up ready with its host key (its
secret placeholder resolved) and is deleted by its own watchdog with its
own key after a short boot grace. Everything
it made is removed and confirmed gone, whatever fails (Ctrl-C too). Exit 0
when every check passed (warnings do not fail), 1 naming those that failed.`)
	asJSON := fs.Bool("json", false, "write the report as one JSON object on stdout (no secret values in it)")
	noPod := fs.Bool("no-pod", false, "skip the pod's checks (the account ones cost nothing)")
	timeout := fs.Duration("timeout", doctor.DefaultTimeout, "the bound of the whole check")
	bootGrace := fs.Duration("boot-grace", 0, "the test pod's boot grace, after which its watchdog deletes it (default 1m; 15s with --local)")
	interval := fs.Duration("watchdog-interval", 0, "the test pod watchdog's tick (default 5s; 1s with --local)")
	var podEnv envFlag
	fs.Var(&podEnv, "pod-env", "NAME=VALUE added to the pod's env (repeatable; for tests)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("doctor takes no arguments")
	}
	if *timeout <= 0 || *bootGrace < 0 || *interval < 0 {
		return usagef("--timeout must be positive, --boot-grace and --watchdog-interval not negative")
	}
	if err := a.open(ctx); err != nil {
		return err
	}
	o := a.doctorOptions()
	o.Timeout, o.NoPod, o.BootGrace, o.Interval, o.PodEnv = *timeout, *noPod, *bootGrace, *interval, podEnv
	o.Progress = func(c doctor.Check) { a.say("%s: %s", c.Name, c.Result) }
	if a.local != nil {
		if o.BootGrace == 0 {
			o.BootGrace = 15 * time.Second
		}
		if o.Interval == 0 {
			o.Interval = time.Second
		}
		if srv := a.local.srv; srv != nil {
			o.DeleteCodes = srv.DeleteStatuses
		}
	}
	a.say("checking %s (at most %s)", a.apiURL, *timeout)
	rep := doctor.Run(ctx, o)
	if !a.inProcess() && !rep.Interrupted {
		if err := a.saveDoctor(o.Key, rep); err != nil {
			a.say("keeping the report for run's warnings: %v", err)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		a.printDoctor(rep)
	}
	names := failedNames(rep)
	switch {
	case len(names) > 0:
		return &exitError{code: ExitFailed, msg: "doctor: failed: " + strings.Join(names, "; ")}
	case rep.Interrupted:
		return &exitError{code: ExitFailed, msg: "doctor: interrupted: the checks marked skipped did not run"}
	}
	return nil
}

// printDoctor writes the report as a table, then what each failure or
// warning means.
func (a *app) printDoctor(rep doctor.Report) {
	tw := tabwriter.NewWriter(a.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tRESULT\tDETAIL")
	for _, c := range rep.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, c.Result, c.Detail)
	}
	tw.Flush()
	for _, c := range rep.Checks {
		if c.Result == doctor.ResultFail || c.Result == doctor.ResultWarn {
			fmt.Fprintf(a.stdout, "%s (%s): %s\n", c.Name, c.Result, c.Meaning)
		}
	}
	if rep.CreateBodyBytes > 0 {
		fmt.Fprintf(a.stdout, "create body: %d bytes, %d under Runpod's %d\n", rep.CreateBodyBytes,
			runpod.MaxCreatePodBody-rep.CreateBodyBytes, runpod.MaxCreatePodBody)
	}
	if rep.PodID != "" {
		billed := "not billed yet (Runpod bills with a lag: its console shows the pod's bill later)"
		if rep.BilledUSD != nil {
			billed = "billed " + money(*rep.BilledUSD)
		}
		fmt.Fprintf(a.stdout, "pod %s (%s at %s/h): estimated cost %s, %s\n", rep.PodID, rep.GPU, money(rep.CostPerHr), money(rep.EstimateUSD), billed)
	}
	verdict := "every check passed"
	if !rep.OK() {
		verdict = fmt.Sprintf("%d check(s) failed", len(rep.Failed()))
	}
	fmt.Fprintf(a.stdout, "%s in %s\n", verdict, since(rep.Elapsed))
}

func failedNames(rep doctor.Report) []string {
	var names []string
	for _, c := range rep.Failed() {
		names = append(names, c.Name)
	}
	return names
}

// savedDoctor is launch doctor's last report for a key, which run reads
// to warn before a create.
type savedDoctor struct {
	Version string        `json:"version"` // the SDK's: another version checks again
	Report  doctor.Report `json:"report"`
}

// doctorFile is where the last report for key is kept: named by a hash
// of the key, never the key.
func (a *app) doctorFile(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(a.store.Dir, "doctor", hex.EncodeToString(sum[:8])+".json")
}

func (a *app) saveDoctor(key string, rep doctor.Report) error {
	file := a.doctorFile(key)
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(savedDoctor{Version: podenv.Version, Report: rep}, "", "  ")
	if err != nil {
		return err
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// doctorOptions are the doctor's options for the launcher's client.
func (a *app) doctorOptions() doctor.Options {
	return doctor.Options{Key: a.apiKey(), BaseURL: a.apiURL, Transport: a.transport, UserAgent: userAgent, Logger: a.logger}
}

// loadDoctor is the last report kept for key, when it is this SDK
// version's against this API.
func (a *app) loadDoctor(key string) (doctor.Report, bool) {
	b, err := os.ReadFile(a.doctorFile(key))
	if err != nil {
		return doctor.Report{}, false
	}
	var s savedDoctor
	if json.Unmarshal(b, &s) != nil || s.Version != podenv.Version || s.Report.APIURL != a.apiURL {
		return doctor.Report{}, false
	}
	return s.Report, true
}

// EnvAccountCheck, set to "off", keeps run from checking the key's
// account before its first create (the check is otherwise made once per
// key and SDK version).
const EnvAccountCheck = "OVERBRAINER_ACCOUNT_CHECK"

// accountCheckTimeout bounds run's account check.
const accountCheckTimeout = 30 * time.Second

// accountCheck warns before a create when the doctor found, with this
// key, something runs rely on failing. It reads the last report kept for
// the key (launch doctor's, or its own); without one for this SDK version
// and API it first makes the doctor's read-only checks (the key's lists,
// the live OpenAPI text) and keeps them. The in-process emulator, new
// each time, is not checked.
func (a *app) accountCheck(ctx context.Context) {
	key := a.apiKey()
	rep, ok := a.loadDoctor(key)
	if !ok {
		if a.inProcess() || a.getenv(EnvAccountCheck) == "off" {
			return
		}
		a.say("checking what runs rely on with this key (once per key and SDK version; launch doctor checks all)")
		o := a.doctorOptions()
		o.AccountOnly, o.Timeout = true, accountCheckTimeout
		if rep = doctor.Run(ctx, o); ctx.Err() != nil {
			return
		}
		if err := a.saveDoctor(key, rep); err != nil {
			a.say("keeping the account check: %v", err)
		}
	}
	if names := failedNames(rep); len(names) > 0 {
		a.say("warning: launch doctor found, with this key, what runs rely on failing: %s (launch doctor checks again)", strings.Join(names, "; "))
	}
}

// apiKey is the key the launcher's client uses.
func (a *app) apiKey() string {
	if a.local != nil {
		return a.local.key
	}
	return a.getenv(EnvAPIKey)
}
