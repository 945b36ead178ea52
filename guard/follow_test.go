package guard

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/overbrainer/overbrainer-go/internal/costplan"
	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/podssh"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// The whole cycle on a pod that behaves: every step told in order, the
// output whole and in order across chunks, the Record saved at each step,
// the results marked retrieved only once downloaded, the lease held while
// they download.
func TestCycle(t *testing.T) {
	big := strings.Repeat("x", maxChunk+10)
	h := newHarness(t,
		look{st: noVerdict},
		look{st: ready},
		look{st: running, out: "epoch 1\n"},
		look{st: running},
		look{st: running, out: big},
		look{st: running, out: "epoch 2\n"},
		look{st: exited(0), out: "done\n"},
	)
	h.api.boot = []runpod.PodStatus{runpod.StatusProvisioning}
	h.pod.downloaded = podssh.Extracted{Files: 3, Dirs: 1, Bytes: 1234}
	h.pod.onDownload = func() {
		h.clk.wakeParked(t)
		select {
		case <-h.pod.leased:
		case <-time.After(5 * time.Second):
			t.Error("the lease was not renewed during the download")
		}
	}
	ctx := context.Background()
	spec := h.spec()
	sameAsSaved := func(step string, r *Run) {
		t.Helper()
		if diff := cmp.Diff(h.lastSaved(), r.Record()); diff != "" {
			t.Errorf("after %s, the saved record is not the run's (-saved +run):\n%s", step, diff)
		}
	}

	r, err := h.launch(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	sameAsSaved("Launch", r)
	rec := r.Record()
	if d := h.dials[0]; d.Addr != fakeAddr || !pins(t, d, rec) {
		t.Errorf("dialled %s with host key %v, want %s with the record's", d.Addr, d.HostKey, fakeAddr)
	}

	if err := r.Start(ctx, Job{}); err != nil {
		t.Fatal(err)
	}
	sameAsSaved("Start", r)
	wantFiles := map[string]string{"job/": "", "job/train.py": "print('hi')\n", jobctl.CommandFile: testCommand + "\n"}
	if diff := cmp.Diff(wantFiles, h.pod.uploaded); diff != "" {
		t.Errorf("uploaded (-want +got):\n%s", diff)
	}
	wantStart := []startCall{{jobctl.StartCommand(rec.RunDir, podenv.JobEnv), ""}} // no secrets: nothing on stdin
	if diff := cmp.Diff(wantStart, h.pod.starts); diff != "" {
		t.Errorf("start (-want +got):\n%s", diff)
	}

	var out bytes.Buffer
	end, err := r.Follow(ctx, &out)
	if err != nil {
		t.Fatal(err)
	}
	if want := (End{How: HowExited, ExitCode: 0, RunDir: rec.RunDir}); end != want {
		t.Errorf("Follow = %+v, want %+v", end, want)
	}
	want := "epoch 1\n" + big + "epoch 2\ndone\n"
	if out.String() != want {
		t.Errorf("the writer got %d bytes, not the job's %d in order", out.Len(), len(want))
	}
	if got := r.Record().LogOffset; got != int64(out.Len()) {
		t.Errorf("LogOffset %d, written %d", got, out.Len())
	}
	sameAsSaved("Follow", r)
	// Every chunk's end was saved, so a killed process resumes there.
	var offsets []int64
	for _, s := range h.allSaved() {
		if len(offsets) == 0 || offsets[len(offsets)-1] != s.LogOffset {
			offsets = append(offsets, s.LogOffset)
		}
	}
	m := int64(maxChunk)
	if diff := cmp.Diff([]int64{0, 8, 8 + m, 8 + m + 18, 8 + m + 23}, offsets); diff != "" {
		t.Errorf("saved offsets (-want +got):\n%s", diff)
	}
	// A full chunk is followed by a look at once; a short one by a sleep.
	lines := h.trace.all()
	for i, l := range lines[:len(lines)-1] {
		switch {
		case strings.HasSuffix(l, "-> "+strconv.Itoa(maxChunk)+" bytes") && !strings.HasPrefix(lines[i+1], "poll "):
			t.Errorf("after a full chunk came %q, not a look", lines[i+1])
		case strings.HasSuffix(l, "-> 8 bytes") && lines[i+1] != "sleep "+testPoll.String():
			t.Errorf("after a short chunk came %q, not the poll's sleep", lines[i+1])
		}
	}

	got, err := r.Collect(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got.Files != 3 || got.Bytes != 1234 {
		t.Errorf("Collect = %+v", got)
	}
	sameAsSaved("Collect", r)
	if diff := cmp.Diff([]putCall{{watchdog.Retrieved, ""}}, h.pod.allPuts()); diff != "" {
		t.Errorf("puts (-want +got):\n%s", diff)
	}
	if dl, put := h.trace.index("download", 0), h.trace.index("put "+watchdog.Retrieved, 0); dl < 0 || put < dl {
		t.Errorf("retrieved put at %d, download at %d: %q", put, dl, h.trace.all())
	}

	res, err := r.Delete(ctx)
	if err != nil || res != runpod.Deleted {
		t.Fatalf("Delete = %v, %v", res, err)
	}
	sameAsSaved("Delete", r)
	final := r.Record()
	if final.Phase != PhaseDone || final.SecretID != "" || final.ExitCode == nil || *final.ExitCode != 0 || final.Verdict != "ready" {
		t.Errorf("final record: phase %s, secret %q, exit code %v, verdict %q", final.Phase, final.SecretID, final.ExitCode, final.Verdict)
	}
	if want := costplan.Spent(0.69, final.BillingStart, final.Ended); final.CostUSD != want || want == 0 {
		t.Errorf("cost %v, want %v", final.CostUSD, want)
	}

	wantKinds := []string{"created", "running", "verdict", "attempt", "uploaded", "job_started", "job_ended", "collected", "deleted", "secret_deleted"}
	if diff := cmp.Diff(wantKinds, h.kinds(progress...)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"GetGPUType", "ListPods", "CreateSecret", "CreatePod", "GetPod", "GetPod", "DeletePod", "GetPod", "ListPods", "DeleteSecret"}, h.api.methods()); diff != "" {
		t.Errorf("API calls (-want +got):\n%s", diff)
	}
}

// The first look of a follow renews the lease; a later one only once
// LeaseEvery has passed and output came since the last renewal: a job that
// writes nothing lets the lease lapse, so the deadline can end it.
func TestLeaseFollowsProgress(t *testing.T) {
	const looks = 1800 // an hour of looks
	var every []time.Duration
	for d := time.Duration(0); d <= time.Hour; d += testLease {
		every = append(every, d)
	}
	for _, tc := range []struct {
		name string
		out  func(i int) string
		want []time.Duration // when the follow's renewing looks came
	}{
		{"no output", func(int) string { return "" }, []time.Duration{0}},
		{"output at every look", func(int) string { return "." }, every},
		// The output seen at 10m renews the lease at the next look.
		{"output once", func(i int) string {
			if i == 300 {
				return "."
			}
			return ""
		}, []time.Duration{0, 10*time.Minute + testPoll}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := []look{{st: ready}}
			for i := range looks {
				script = append(script, look{st: running, out: tc.out(i)})
			}
			h := newHarness(t, append(script, look{st: exited(0)})...)
			r := h.mustStart(h.spec())
			renewed := len(h.eventsOf(EventLeaseRenewed))
			got := followScript(t, h, r)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("renewals after the follow's start (-want +got):\n%s", diff)
			}
			if n := len(h.eventsOf(EventLeaseRenewed)) - renewed; n != len(tc.want) {
				t.Errorf("%d lease events, want %d", n, len(tc.want))
			}
		})
	}
}

// Start writes the cost cap's two instants on the pod's clock (here an
// hour and 7 s ahead of ours), from the billing start and the pod's
// price, before the job starts.
func TestStartPlansTheCostCap(t *testing.T) {
	const maxUSD = 3.0
	podNow := t0.Add(time.Hour).Unix() + 7
	for _, tc := range []struct {
		name               string
		createCost, podCst float64
		price              float64
	}{
		{"price from the create", 0.69, 0, 0.69},
		{"price asked when the pod had none", 0, 0.5, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clockLook := ready
			clockLook.PodNow = podNow
			h := newHarness(t, look{st: ready}, look{st: clockLook})
			h.api.costPerHr, h.api.podCost = tc.createCost, tc.podCst
			spec := h.spec()
			spec.MaxCostUSD = maxUSD
			r := h.mustStart(spec)
			rec := r.Record()

			polls := h.pod.allPolls()
			if len(polls) != 2 || polls[1].Touch {
				t.Fatalf("looks %+v: want the verdict's and one clock look without the lease", polls)
			}
			at := polls[1].At
			offset := costplan.ClockOffset(at, at, podNow)
			plan, err := costplan.CostCap(podenv.Rules{MaxCostUSD: maxUSD}, rec.BillingStart, tc.price, 0, offset)
			if err != nil {
				t.Fatal(err)
			}
			want := []putCall{
				{watchdog.SnapshotAt, strconv.FormatInt(plan.SnapshotAt, 10)},
				{watchdog.CostCapAt, strconv.FormatInt(plan.CostCapAt, 10)},
			}
			if diff := cmp.Diff(want, h.pod.allPuts()); diff != "" {
				t.Errorf("puts (-want +got):\n%s", diff)
			}
			// Not costplan's word alone: the cap is where the money ends,
			// on the pod's clock.
			span := time.Duration(maxUSD / tc.price * float64(time.Hour))
			if capAt := rec.BillingStart.Add(span).Add(time.Hour + 7*time.Second).Unix(); math.Abs(float64(plan.CostCapAt-capAt)) > 1 {
				t.Errorf("cost_cap_at %d, the money ends at %d on the pod's clock", plan.CostCapAt, capAt)
			}
			if put, start := h.trace.index("put "+watchdog.CostCapAt, 0), h.trace.index("start", 0); put < 0 || start < put {
				t.Errorf("the job started (%d) before the cap was written (%d)", start, put)
			}
			es := h.eventsOf(EventCostPlan)
			if len(es) != 1 || !es[0].CostCapAt.Equal(time.Unix(plan.CostCapAt, 0).Add(-offset)) || es[0].CostPerHr != tc.price {
				t.Errorf("cost plan events %+v", es)
			}
			if rec.CostPerHr != tc.price {
				t.Errorf("record's price %v, want %v", rec.CostPerHr, tc.price)
			}
			// The run keeps the plan it gave the pod, on this machine's
			// clock.
			if len(es) == 1 && (!rec.CostCapAt.Equal(es[0].CostCapAt) || !rec.SnapshotAt.Equal(es[0].SnapshotAt)) {
				t.Errorf("record's plan %v, %v; the pod's %v, %v", rec.SnapshotAt, rec.CostCapAt, es[0].SnapshotAt, es[0].CostCapAt)
			}
		})
	}
}

// Snapshot requests and the watchdog's delete reason are told once each;
// a pod then found gone (404 or TERMINATED) ends the follow with a
// *PodGoneError that gives the reason, the secret deleted and the pod
// left alone.
func TestPodDeletedByItsWatchdog(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status runpod.PodStatus
		gone   bool
	}{
		{"404", "", true},
		{"terminated", runpod.StatusTerminated, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deadline, cost := running, running
			deadline.Request, cost.Request = watchdog.ReasonDeadline, watchdog.ReasonCost
			deleting := cost
			deleting.DeleteReason = watchdog.DeleteCostCap
			h := newHarness(t)
			h.pod.looks = []look{{st: ready}, {st: running}, {st: deadline}, {st: deadline}, {st: cost},
				{st: deleting}, {st: deleting},
				{err: io.ErrUnexpectedEOF, do: func() { h.api.setStatus(tc.status, tc.gone) }}}
			r := h.mustStart(h.spec())
			started := len(h.allEvents())
			_, err := r.Follow(context.Background(), io.Discard)
			var gone *PodGoneError
			if !errors.As(err, &gone) || !errors.Is(err, ErrPodGone) {
				t.Fatalf("Follow: %v, want a *PodGoneError", err)
			}
			if want := (PodGoneError{PodID: fakePodID, Status: tc.status, DeleteReason: watchdog.DeleteCostCap}); *gone != want {
				t.Errorf("error %+v, want %+v", *gone, want)
			}
			var told []string
			for _, e := range h.allEvents()[started:] {
				switch e.Kind {
				case EventSnapshotRequested, EventDeleteReason:
					told = append(told, e.Kind.String()+" "+string(e.DeleteReason)+string(e.Snapshot))
				case EventFailed:
					told = append(told, e.Kind.String())
					if e.Then != ThenNothing {
						t.Errorf("failed event's Then %v, want ThenNothing", e.Then)
					}
				case EventReconnecting, EventSecretDeleted, EventDeleted:
					told = append(told, e.Kind.String())
				}
			}
			want := []string{"snapshot_requested deadline", "snapshot_requested cost", "delete_reason cost_cap", "reconnecting", "failed", "secret_deleted"}
			if diff := cmp.Diff(want, told); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if got := h.lastSaved(); got.DeleteReason != watchdog.DeleteCostCap || got.Phase != PhaseFailed {
				t.Errorf("saved record: delete reason %q, phase %s", got.DeleteReason, got.Phase)
			}
			if n, m := h.api.count("DeletePod"), h.api.count("DeleteSecret"); n != 0 || m != 1 {
				t.Errorf("%d pod deletes and %d secret deletes, want 0 and 1", n, m)
			}
		})
	}
}

// A pod found EXITED or ERROR still bills for its disk and its watchdog
// no longer runs: the run deletes it, and the secret, and says so.
func TestAnEndedPodIsDeleted(t *testing.T) {
	for _, status := range []runpod.PodStatus{runpod.StatusExited, runpod.StatusError} {
		t.Run(string(status), func(t *testing.T) {
			h := newHarness(t)
			h.pod.looks = []look{{st: ready}, {st: running},
				{err: io.ErrUnexpectedEOF, do: func() { h.api.setStatus(status, false) }}}
			r := h.mustStart(h.spec())
			_, err := r.Follow(context.Background(), io.Discard)
			var gone *PodGoneError
			if !errors.As(err, &gone) || gone.Status != status {
				t.Fatalf("Follow: %v, want a *PodGoneError with status %s", err, status)
			}
			if n, m := h.api.count("DeletePod"), h.api.count("DeleteSecret"); n != 1 || m != 1 {
				t.Errorf("%d pod deletes and %d secret deletes, want 1 and 1: %v", n, m, h.api.allCalls())
			}
			if es := h.eventsOf(EventFailed); len(es) != 1 || es[0].Then != ThenDelete {
				t.Errorf("failed events %v, want one that says the pod is deleted", es)
			}
			if got := r.Record(); got.Phase != PhaseFailed || got.Ended.IsZero() {
				t.Errorf("phase %s, ended %v", got.Phase, got.Ended)
			}
			if !Abandoned(status) {
				t.Errorf("Abandoned(%s) is false, though the pod bills unwatched", status)
			}
		})
	}
	if Abandoned(runpod.StatusRunning) {
		t.Error("Abandoned(RUNNING)")
	}
}

// A broken connection is dialled again (through a failed dial) and the
// follow goes on from the saved offset: nothing twice, nothing lost.
func TestFollowReconnects(t *testing.T) {
	h := newHarness(t, look{st: ready},
		look{st: running, out: "a"}, look{st: running, out: "b"},
		// Output that appeared just before the connection broke.
		look{st: running, out: "c", err: errors.New("fake: connection reset")},
		look{st: running, out: "d"}, look{st: exited(0)})
	r := h.mustStart(h.spec())
	h.dialErrs = []error{errors.New("fake: connection refused")}
	first := len(h.pod.allPolls())
	var out bytes.Buffer
	if _, err := r.Follow(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "abcd" || r.Record().LogOffset != 4 {
		t.Errorf("wrote %q, offset %d; want abcd, 4", out.String(), r.Record().LogOffset)
	}
	var offsets []int64
	for _, p := range h.pod.allPolls()[first:] {
		offsets = append(offsets, p.Offset)
	}
	if diff := cmp.Diff([]int64{0, 1, 2, 2, 4}, offsets); diff != "" {
		t.Errorf("look offsets (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"reconnecting", "reconnected"}, kindsOf(h.allEvents(), EventReconnecting, EventReconnected)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if n := h.dialCount(); n != 3 {
		t.Errorf("%d dials, want 3 (launch, refused, reconnected)", n)
	}
	for _, d := range h.dials {
		if !pins(t, d, r.Record()) {
			t.Error("a redial did not pin the run's host key")
		}
	}
}

// kindsOf names the events of the given kinds, in order.
func kindsOf(es []Event, kinds ...EventKind) []string {
	var ks []string
	for _, e := range es {
		for _, k := range kinds {
			if e.Kind == k {
				ks = append(ks, k.String())
			}
		}
	}
	return ks
}

// How a job ended comes from what the pod shows: a run directory without
// job.pid after the job was started is RunDirLost (and the job is not
// started again), a job cancelled by a restarted container is Lost.
func TestFollowTellsHowTheJobEnded(t *testing.T) {
	lost := running
	lost.Alive, lost.Cancelled, lost.CancelReason = false, true, watchdog.CancelContainerRestarted
	cancelled := lost
	cancelled.CancelReason = ""
	killed := running
	killed.Alive = false
	for _, tc := range []struct {
		name string
		last jobctl.State
		want End
		lost bool
	}{
		{"run directory lost", ready, End{How: HowRunDirLost, ExitCode: -1}, true},
		{"lost with its container", lost, End{How: HowLost, ExitCode: -1}, true},
		{"cancelled", cancelled, End{How: HowCancelled, ExitCode: -1}, false},
		{"killed", killed, End{How: HowKilled, ExitCode: -1}, false},
		{"exited", exited(3), End{How: HowExited, ExitCode: 3}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, look{st: ready}, look{st: running, out: "x"}, look{st: tc.last})
			r := h.mustStart(h.spec())
			ctx := context.Background()
			end, err := r.Follow(ctx, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			tc.want.RunDir = r.Record().RunDir
			if end != tc.want {
				t.Errorf("Follow = %+v, want %+v", end, tc.want)
			}
			if got := errors.Is(end.Err(), ErrJobLost); got != tc.lost {
				t.Errorf("End.Err() %v: lost %v, want %v", end.Err(), got, tc.lost)
			}
			if es := h.eventsOf(EventJobEnded); len(es) != 1 || es[0].End != tc.want {
				t.Errorf("job ended events %+v", es)
			}
			if tc.want.How != HowRunDirLost {
				return
			}
			if err := r.Start(ctx, Job{}); !errors.Is(err, ErrJobLost) {
				t.Errorf("Start after the run directory was lost: %v, want ErrJobLost", err)
			}
			if n := strings.Count(strings.Join(h.trace.all(), "\n"), "upload "); n != 1 {
				t.Errorf("%d uploads, want 1", n)
			}
		})
	}
}

// A nil writer takes no output: Follow still follows the job to its end.
func TestFollowWithoutAWriter(t *testing.T) {
	h := newHarness(t, look{st: ready}, look{st: running, out: "x"}, look{st: exited(0)})
	r := h.mustStart(h.spec())
	end, err := r.Follow(context.Background(), nil)
	if err != nil || end.How != HowExited || end.ExitCode != 0 {
		t.Fatalf("Follow(nil) = %+v, %v; want the job's exit 0", end, err)
	}
}

// A process that stopped following leaves a saved Record; Attach in
// another takes the run up from it, and the follow goes on from the saved
// offset with the pinned host key.
func TestAttachResumesFromTheSavedRecord(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := newHarness(t, look{st: ready},
		look{st: running, out: "a"}, look{st: running, out: "b", do: cancel},
		look{st: running}, // the attach's verdict look
		look{st: running, out: "c"}, look{st: exited(0), out: "d"})
	r := h.mustStart(h.spec())
	var before, after bytes.Buffer
	if _, err := r.Follow(ctx, &before); !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow: %v", err)
	}
	r.Close()
	rec := h.lastSaved()

	r2, err := attach(context.Background(), h.api, rec, h.options()...)
	if err != nil {
		t.Fatal(err)
	}
	if got := r2.Record().Phase; got != PhaseRunning {
		t.Errorf("attached in phase %s, want running", got)
	}
	if _, err := r2.Follow(context.Background(), &after); err != nil {
		t.Fatal(err)
	}
	if before.String() != "ab" || after.String() != "cd" {
		t.Errorf("wrote %q then %q, want ab then cd", before.String(), after.String())
	}
	if d := h.dials[len(h.dials)-1]; !pins(t, d, rec) {
		t.Error("attach did not pin the record's host key")
	}
}

// A kept pod found EXITED is only stopped: the run reports it (its
// storage still bills) and leaves it, pod and secret, for an explicit
// Remove; a later Attach (launch ssh) leaves it too.
func TestAKeptEndedPodIsLeft(t *testing.T) {
	h := newHarness(t)
	h.pod.looks = []look{{st: ready}, {st: running},
		{err: io.ErrUnexpectedEOF, do: func() { h.api.setStatus(runpod.StatusExited, false) }}}
	spec := h.spec()
	spec.Keep = true
	r := h.mustStart(spec)
	_, err := r.Follow(context.Background(), io.Discard)
	var gone *PodGoneError
	if !errors.As(err, &gone) || gone.Status != runpod.StatusExited {
		t.Fatalf("Follow: %v, want a *PodGoneError with status EXITED", err)
	}
	if n, m := h.api.count("DeletePod"), h.api.count("DeleteSecret"); n != 0 || m != 0 {
		t.Errorf("%d pod deletes and %d secret deletes of a kept pod, want none: %v", n, m, h.api.allCalls())
	}
	if es := h.eventsOf(EventFailed); len(es) != 1 || es[0].Then != ThenNothing || !strings.Contains(es[0].Err.Error(), "bills") {
		t.Errorf("failed events %v, want one that leaves the pod and says it bills", es)
	}
	rec := r.Record()
	if rec.Phase != PhaseStopped || !rec.Ended.IsZero() {
		t.Errorf("phase %s, ended %v: want stopped and not ended", rec.Phase, rec.Ended)
	}
	if _, err := attach(context.Background(), h.api, rec, h.options(WithLeaveOnFailure())...); err == nil {
		t.Error("attach to a kept EXITED pod succeeded")
	}
	if n, m := h.api.count("DeletePod"), h.api.count("DeleteSecret"); n != 0 || m != 0 {
		t.Errorf("attach deleted a kept pod: %d pod deletes, %d secret deletes", n, m)
	}
}

// A watchdog whose delete no GET confirmed (a 403 on every write, say)
// reaches a following client: each new delete_failed line is an
// EventDeleteFailed with the reason and the codes, and the delete right
// its probe could not prove is told once.
func TestFollowTellsARefusedDelete(t *testing.T) {
	const codes = "DELETE:403,terminate:403,stop:403,runpodctl:absent"
	unproven := running
	unproven.Delete.Right = watchdog.UnprovenDeleteRight
	refused := func(at int64) jobctl.State {
		s := unproven
		s.DeleteReason, s.Delete.FailedAt, s.Delete.Codes = watchdog.DeleteCostCap, at, codes
		return s
	}
	h := newHarness(t, look{st: ready}, look{st: unproven}, look{st: unproven}, look{st: refused(1_700_000_060)},
		look{st: refused(1_700_000_060)}, look{st: refused(1_700_000_120)}, look{st: exited(0)})
	if _, err := h.mustStart(h.spec()).Follow(context.Background(), io.Discard); err != nil {
		t.Fatal(err)
	}
	if n := len(h.eventsOf(EventDeleteRight)); n != 1 {
		t.Errorf("%d delete right events, want 1", n)
	}
	failed := h.eventsOf(EventDeleteFailed)
	if len(failed) != 2 {
		t.Fatalf("%d delete_failed events, want one per tick that failed (2): %v", len(failed), failed)
	}
	for _, e := range failed {
		if e.DeleteReason != watchdog.DeleteCostCap || e.DeleteCodes != codes {
			t.Errorf("event %+v", e)
		}
	}
}

// A pod lost with its host drops the connection a moment before the API
// shows it ended: while the dials are refused, the run reads the pod again
// at their pace, not after 5 s (a recovery took 1.56× a fresh launch for
// it, issue 42), nor a poll later (the look's end is noticed at once),
// and the read that shows it ended ends the run.
func TestALostPodIsSeenAtTheDialPace(t *testing.T) {
	h := newHarness(t)
	h.pod.looks = []look{{st: ready}, {st: running},
		{err: io.ErrUnexpectedEOF, do: func() {
			h.api.mu.Lock()
			h.api.boot, h.api.status = []runpod.PodStatus{runpod.StatusRunning}, runpod.StatusExited
			h.api.mu.Unlock()
			h.mu.Lock()
			for range 100 {
				h.dialErrs = append(h.dialErrs, errors.New("fake: connection refused"))
			}
			h.mu.Unlock()
		}}}
	r := h.mustStart(h.spec())
	_, err := r.Follow(context.Background(), io.Discard)
	var gone *PodGoneError
	if !errors.As(err, &gone) || gone.Status != runpod.StatusExited {
		t.Fatalf("Follow: %v, want a *PodGoneError with status EXITED", err)
	}
	// The time slept from the first refused dial to the next read of
	// the pod.
	lines := h.trace.all()
	var waited time.Duration
	for _, l := range lines[h.trace.index("dial", h.trace.index("poll 0 failed", 0)):] {
		if strings.HasPrefix(l, "api GetPod") {
			break
		}
		if d, ok := strings.CutPrefix(l, "sleep "); ok {
			w, _ := time.ParseDuration(d)
			waited += w
		}
	}
	if waited > 2*firstSSHLook {
		t.Errorf("the pod was read again %s after the first refused dial, want at most %s:\n%s",
			waited, 2*firstSSHLook, strings.Join(lines, "\n"))
	}
	// That read shows the pod ended: the run ends with it, without a
	// poll's sleep and a read more.
	read := h.trace.index("api GetPod", h.trace.index("dial", h.trace.index("poll 0 failed", 0)))
	for _, l := range lines[read:h.trace.index("api DeletePod", read)] {
		if strings.HasPrefix(l, "sleep ") {
			t.Errorf("the run slept after the read that showed its pod ended:\n%s", strings.Join(lines, "\n"))
			break
		}
	}
}

// The pause between two looks ends when the connection does, or the
// look's session though the connection stays (a pod lost with its host
// kills watch.sh at once): a lost connection may be a lost pod, and
// waiting out --poll before the next look delayed a recovery by up to
// that much (issue 42).
func TestFollowNoticesALostConnectionAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose func(c *fakeConn)
	}{
		{"connection", func(c *fakeConn) { c.Close() }},
		{"look", func(c *fakeConn) {
			c.mu.Lock()
			w := c.watchers[len(c.watchers)-1]
			c.mu.Unlock()
			w.end()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, look{st: ready}, look{st: running}, look{st: running}, look{st: exited(0)})
			var mu sync.Mutex
			var conns []*fakeConn
			dial := func(ctx context.Context, tg podssh.Target) (conn, error) {
				c, err := h.dial(ctx, tg)
				if fc, ok := c.(*fakeConn); ok {
					mu.Lock()
					conns = append(conns, fc)
					mu.Unlock()
				}
				return c, err
			}
			// Looks a lease apart: every pause between them parks until woken.
			r := h.mustStart(h.spec(), WithPoll(testLease), withDial(dial))
			h.clk.parked = make(chan struct{}, 1)
			ctx, cancel := context.WithCancel(context.Background())
			ended := make(chan error, 1)
			go func() {
				_, err := r.Follow(ctx, io.Discard)
				ended <- err
			}()
			defer func() {
				cancel()
				<-ended
			}()
			select {
			case <-h.clk.parked:
			case <-time.After(time.Minute):
				t.Fatal("the follow never paused")
			}
			mu.Lock()
			tc.lose(conns[len(conns)-1])
			mu.Unlock()
			select {
			case <-h.clk.parked:
				// The next pause, on the new connection: the lost one ended
				// the pause it was in.
			case err := <-ended:
				ended <- err
				t.Fatalf("Follow ended: %v", err)
			case <-time.After(time.Minute):
				t.Fatal("the pause did not end with the connection")
			}
			if n := h.dialCount(); n != 2 {
				t.Errorf("%d dials, want 2 (launch, reconnect)", n)
			}
		})
	}
}
