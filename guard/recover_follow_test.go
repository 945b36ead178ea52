package guard_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/podssh"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// countingJob counts steps into its outputs, with a snapshot proof of
// each; started from a count it finds there, it counts two more and ends.
// A snapshot request makes it prove a checkpoint for it and exit
// $STOP_EXIT (0 by default).
const countingJob = `n=$(cat "$OVERBRAINER_OUTPUTS/step" 2>/dev/null || echo 0)
echo "$n" > "$OVERBRAINER_OUTPUTS/started_at"
end=1000000; [ "$n" -gt 0 ] && end=$((n + 2))
proof() {
  printf '{"checkpoint": "step", "step": %d, "reason": "%s"}\n' "$n" "$1" > "$OVERBRAINER_OUTPUTS/snapshot.json.tmp"
  mv -f "$OVERBRAINER_OUTPUTS/snapshot.json.tmp" "$OVERBRAINER_OUTPUTS/snapshot.json"
}
while [ "$n" -lt "$end" ]; do
  if [ -f "$OVERBRAINER_RUN_DIR/snapshot.request" ]; then
    proof "$(cat "$OVERBRAINER_RUN_DIR/snapshot.request")"
    exit "${STOP_EXIT:-0}"
  fi
  sleep 0.3; n=$((n+1)); echo "$n" > "$OVERBRAINER_OUTPUTS/step"
  proof periodic
done`

// recoveryWorld is an emulator with a pod runner and a run of the
// counting job whose events are kept.
type recoveryWorld struct {
	t    *testing.T
	srv  *runpodtest.Server
	api  *runpod.Client
	dir  string
	spec guard.Spec

	mu     sync.Mutex
	events []guard.Event
}

func newRecoveryWorld(t *testing.T) *recoveryWorld {
	srv := runpodtest.NewServer(runpodtest.WithPodRunner())
	t.Cleanup(srv.Close)
	api, err := runpod.New(srv.APIKey(), runpod.WithBaseURL(srv.BaseURL()))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	job := filepath.Join(dir, "job")
	if err := os.Mkdir(job, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(job, "train.sh"), []byte(countingJob+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := &recoveryWorld{t: t, srv: srv, api: api, dir: dir}
	w.spec = guard.Spec{
		Job:     guard.Job{Dir: job, Command: "sh train.sh"},
		Rules:   podenv.Rules{Deadline: time.Now().Add(time.Hour), MaxCostUSD: 1},
		Recover: guard.Recovery{Times: 2, PullEvery: 300 * time.Millisecond, PullDir: filepath.Join(dir, "pulls")},
	}
	return w
}

func (w *recoveryWorld) options() []guard.Option {
	return []guard.Option{guard.WithPoll(100 * time.Millisecond), guard.WithEvents(func(e guard.Event) {
		w.mu.Lock()
		w.events = append(w.events, e)
		w.mu.Unlock()
	})}
}

func (w *recoveryWorld) of(kind guard.EventKind) []guard.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	var got []guard.Event
	for _, e := range w.events {
		if e.Kind == kind {
			got = append(got, e)
		}
	}
	return got
}

// launch launches the run and starts its job.
func (w *recoveryWorld) launch(ctx context.Context) *guard.Run {
	run, err := guard.Launch(ctx, w.api, w.spec, w.options()...)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(run.Close)
	if err := run.Start(ctx, guard.Job{}); err != nil {
		w.t.Fatal(err)
	}
	return run
}

// finish follows the run to a job that exited 0, collects it and
// deletes its pod; it returns the Record as the follow left it and the
// results' directory.
func (w *recoveryWorld) finish(ctx context.Context, run *guard.Run) (guard.Record, string) {
	t := w.t
	t.Helper()
	end, err := run.Follow(ctx, io.Discard)
	if err != nil || !end.OK() {
		t.Fatalf("Follow: %v, %v", end, err)
	}
	rec := run.Record()
	results := filepath.Join(w.dir, "results")
	if _, err := run.Collect(ctx, results); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	return rec, results
}

// pulledStep is the step of the newest pull, 0 without one.
func (w *recoveryWorld) pulledStep() int {
	out := guard.PulledOutputs(w.spec.Recover.PullDir)
	if out == "" {
		return 0
	}
	b, _ := os.ReadFile(filepath.Join(out, "step"))
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// failHostAfterPull fails pod's host once a pull holds step 2 or later.
func (w *recoveryWorld) failHostAfterPull(pod string) {
	go func() {
		for deadline := time.Now().Add(2 * time.Minute); w.pulledStep() < 2 && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		if err := w.srv.FailHost(pod); err != nil {
			w.t.Error(err)
		}
	}()
}

// TestFollowRecovers: with Spec.Recover, Follow itself takes a job whose
// pod's host failed up on a second pod, made only once the first is
// gone, from the newest pull; both pods are in the Record, the run's
// cost cap holds over both, and the recovery is told.
func TestFollowRecovers(t *testing.T) {
	t.Parallel()
	w := newRecoveryWorld(t)
	ctx := context.Background()
	run := w.launch(ctx)
	first := run.Record().PodID
	w.failHostAfterPull(first)
	rec, results := w.finish(ctx, run)

	pods := w.srv.Pods()
	if len(pods) != 2 || pods[0].ID != first || rec.PodID != pods[1].ID {
		t.Fatalf("pods %+v, want the failed one and one more", pods)
	}
	if pods[1].CreatedAt.Before(pods[0].EndedAt) {
		t.Errorf("the second pod was made at %s, before the first ended at %s", pods[1].CreatedAt, pods[0].EndedAt)
	}
	for _, p := range pods {
		if p.Billing {
			t.Errorf("pod %s still bills", p.ID)
		}
	}
	if len(rec.Attempts) != 2 || rec.Attempts[0].PodID != first || rec.Attempts[0].Ended == "" || rec.Attempts[0].CostUSD <= 0 || rec.Attempts[1].PodID != rec.PodID {
		t.Errorf("attempts %+v", rec.Attempts)
	}
	if rec.Recovery.Made != 1 || rec.Recovery.Replacing != "" {
		t.Errorf("recovery state %+v", rec.Recovery)
	}
	if usd := w.srv.TotalUSD(); usd > rec.MaxCostUSD {
		t.Errorf("billed %v over the cap %v", usd, rec.MaxCostUSD)
	}
	rs := w.of(guard.EventRecovering)
	if len(rs) != 1 || rs[0].N != 1 || rs[0].Of != 2 || rs[0].Proof == nil || rs[0].Proof.Step < 2 || rs[0].PodID != first {
		t.Fatalf("recovery events %+v", rs)
	}
	b, _ := os.ReadFile(filepath.Join(results, "outputs", "started_at"))
	if from, _ := strconv.Atoi(strings.TrimSpace(string(b))); int64(from) < rs[0].Proof.Step {
		t.Errorf("the second pod's job started from step %d, want the proof's %d", from, rs[0].Proof.Step)
	}
	if len(w.of(guard.EventFailed)) != 0 {
		t.Errorf("a recovered run told a failure: %v", w.of(guard.EventFailed))
	}
}

// TestFollowRecoversOnVolume: a run on a network volume whose pod's host
// failed goes on on a second pod that mounts the same volume, in its data
// center, under the same claim: its bootstrap moves the lost pod's files
// aside (the lost job's job.pid among them, which would pass for the new
// job's, started and ended), and the job continues from its outputs
// there, with nothing pulled or uploaded, one pod at a time, within the
// cap.
func TestFollowRecoversOnVolume(t *testing.T) {
	t.Parallel()
	w := newRecoveryWorld(t)
	vol := w.srv.AddNetworkVolume("", 20)
	w.spec.NetworkVolumeID = vol.ID
	w.spec.Recover = guard.Recovery{Times: 1}
	ctx := context.Background()
	run := w.launch(ctx)
	first, runDir := run.Record().PodID, run.Record().RunDir
	onVolume := filepath.Join(vol.Dir, strings.TrimPrefix(runDir, guard.DefaultVolumePath))
	go func() {
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if b, _ := os.ReadFile(filepath.Join(onVolume, "outputs", "step")); len(b) > 0 && string(b) != "1\n" {
				break
			}
		}
		if err := w.srv.FailHost(first); err != nil {
			w.t.Error(err)
		}
	}()
	rec, results := w.finish(ctx, run)

	pods := w.srv.Pods()
	if len(pods) != 2 || pods[0].ID != first || rec.PodID != pods[1].ID || pods[1].NetworkVolumeID != vol.ID {
		t.Fatalf("pods %+v: want the failed one and a second on volume %s", pods, vol.ID)
	}
	if pods[1].CreatedAt.Before(pods[0].EndedAt) {
		t.Errorf("the second pod was made at %s, before the first ended at %s", pods[1].CreatedAt, pods[0].EndedAt)
	}
	b, _ := os.ReadFile(filepath.Join(results, "outputs", "started_at"))
	if from, _ := strconv.Atoi(strings.TrimSpace(string(b))); from < 2 {
		t.Errorf("the second pod's job started from step %d, want the volume's step 2 or later", from)
	}
	// The lost job's markers, as the second pod's bootstrap found them.
	lostPID := filepath.Join(onVolume, ".pod", "earlier", rec.PodID, "job.pid")
	if _, err := os.Stat(lostPID); err != nil {
		t.Errorf("the lost job's job.pid was not moved aside: %v", err)
	}
	rs := w.of(guard.EventRecovering)
	if len(rs) != 1 || rs[0].VolumeID != vol.ID || rs[0].Dir != "" || rs[0].Remote == "" || len(w.of(guard.EventResumed)) != 0 {
		t.Errorf("recovery events %+v: want one from the volume, nothing uploaded", rs)
	}
	if len(rec.Attempts) != 2 || rec.Attempts[0].Ended == "" || rec.Recovery.Made != 1 || rec.Recovery.Replacing != "" {
		t.Errorf("attempts %+v, recovery %+v", rec.Attempts, rec.Recovery)
	}
	if usd := w.srv.TotalUSD(); usd > rec.MaxCostUSD {
		t.Errorf("billed %v over the cap %v", usd, rec.MaxCostUSD)
	}
	if len(w.srv.Secrets()) != 0 {
		t.Errorf("secrets left: %+v", w.srv.Secrets())
	}
	if len(w.of(guard.EventFailed)) != 0 {
		t.Errorf("a recovered run told a failure: %v", w.of(guard.EventFailed))
	}
}

// TestFollowRecoversOnVolumeTwice: on a network volume, a new pod lost
// before its job started counts as one more recovery, and a third pod
// takes the run over: the run's host key secret, which every pod of the
// run on the volume needs, outlives the pod that failed.
func TestFollowRecoversOnVolumeTwice(t *testing.T) {
	t.Parallel()
	w := newRecoveryWorld(t)
	vol := w.srv.AddNetworkVolume("", 20)
	w.spec.NetworkVolumeID = vol.ID
	w.spec.Recover = guard.Recovery{Times: 2}
	ctx := context.Background()
	run := w.launch(ctx)
	first, runDir := run.Record().PodID, run.Record().RunDir
	onVolume := filepath.Join(vol.Dir, strings.TrimPrefix(runDir, guard.DefaultVolumePath))
	go func() {
		deadline := time.Now().Add(2 * time.Minute)
		for ; time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if b, _ := os.ReadFile(filepath.Join(onVolume, "outputs", "step")); len(b) > 0 && string(b) != "1\n" {
				break
			}
		}
		if err := w.srv.FailHost(first); err != nil {
			w.t.Error(err)
		}
		// The second pod's host fails as soon as it exists.
		for ; time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if pods := w.srv.Pods(); len(pods) > 1 {
				if err := w.srv.FailHost(pods[1].ID); err != nil {
					w.t.Error(err)
				}
				return
			}
		}
	}()
	rec, results := w.finish(ctx, run)
	pods := w.srv.Pods()
	if len(pods) != 3 || rec.PodID != pods[2].ID || rec.Recovery.Made != 2 {
		t.Fatalf("pods %+v, recovery %+v: want a third pod that finished the job", pods, rec.Recovery)
	}
	b, _ := os.ReadFile(filepath.Join(results, "outputs", "started_at"))
	if from, _ := strconv.Atoi(strings.TrimSpace(string(b))); from < 2 {
		t.Errorf("the third pod's job started from step %d, want the volume's step 2 or later", from)
	}
	if usd := w.srv.TotalUSD(); usd > rec.MaxCostUSD {
		t.Errorf("billed %v over the cap %v", usd, rec.MaxCostUSD)
	}
	if len(w.srv.Secrets()) != 0 {
		t.Errorf("secrets left: %+v", w.srv.Secrets())
	}
}

// TestFollowRecoveryFails: a recovery whose new pod cannot be made ends
// the run once, told once, with nothing left and no recovery under way
// for an Attach to take up.
func TestFollowRecoveryFails(t *testing.T) {
	t.Parallel()
	for _, volume := range []bool{false, true} {
		t.Run(map[bool]string{false: "no volume", true: "network volume"}[volume], func(t *testing.T) {
			t.Parallel()
			w := newRecoveryWorld(t)
			if volume {
				// The run's host key secret, held for the next pod while
				// the recovery is under way, goes with the run.
				w.spec.NetworkVolumeID = w.srv.AddNetworkVolume("", 20).ID
			}
			ctx := context.Background()
			run := w.launch(ctx)
			w.srv.Fail("POST", "/v2/pods", runpodtest.Fault{Status: 400, Detail: "refused", Times: -1})
			w.failHostAfterPull(run.Record().PodID)
			if _, err := run.Follow(ctx, io.Discard); err == nil {
				t.Fatal("Follow ended well without a pod to recover on")
			}
			rec := run.Record()
			if n := len(w.of(guard.EventFailed)); n != 1 || len(w.of(guard.EventRecovering)) != 1 {
				t.Errorf("%d failures and %d recoveries told, want 1 and 1", n, len(w.of(guard.EventRecovering)))
			}
			if rec.Recovery.Replacing != "" || rec.Phase != guard.PhaseFailed {
				t.Errorf("record phase %s, recovery %+v: want failed, none under way", rec.Phase, rec.Recovery)
			}
			if len(w.srv.Billing()) != 0 || len(w.srv.Secrets()) != 0 {
				t.Errorf("left billing %+v, secrets %+v", w.srv.Billing(), w.srv.Secrets())
			}
		})
	}
}

// TestFollowNoRecoveryAfterStop: a job that fails once it was asked to
// stop is not recovered, OnError or not: the stop is the user's.
func TestFollowNoRecoveryAfterStop(t *testing.T) {
	t.Parallel()
	w := newRecoveryWorld(t)
	w.spec.Recover.OnError = true
	w.spec.Job.Command = "STOP_EXIT=3 sh train.sh"
	ctx := context.Background()
	run := w.launch(ctx)
	if _, err := run.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	end, err := run.Follow(ctx, io.Discard)
	if err != nil || end.How != guard.HowExited || end.ExitCode != 3 {
		t.Fatalf("Follow: %v, %v; want the job's exit 3", end, err)
	}
	// Its proof for the request is read, but a job that failed did not
	// checkpoint.
	if end.Requested != "stop" || end.Proof == nil || end.Proof.Reason != "stop" || end.Checkpointed() {
		t.Errorf("end %+v (proof %v): want the stop request and its proof, not checkpointed", end, end.Proof)
	}
	if n := len(w.srv.Pods()); n != 1 || len(w.of(guard.EventRecovering)) != 0 {
		t.Errorf("%d pods, recovery events %v: a stopped job was recovered", n, w.of(guard.EventRecovering))
	}
	if _, err := run.Delete(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestRecoverRefusedSpec: a Spec whose recovery cannot be armed fails
// before any pod exists.
func TestRecoverRefusedSpec(t *testing.T) {
	t.Parallel()
	srv := runpodtest.NewServer()
	t.Cleanup(srv.Close)
	api, err := runpod.New(srv.APIKey(), runpod.WithBaseURL(srv.BaseURL()))
	if err != nil {
		t.Fatal(err)
	}
	job := t.TempDir()
	for _, rc := range []guard.Recovery{{Times: -1}, {Times: 1, PullEvery: -time.Second}, {Times: 1, PullEvery: time.Second}} {
		spec := guard.Spec{Job: guard.Job{Dir: job, Command: "true"}, Rules: podenv.Rules{Deadline: time.Now().Add(time.Hour)}, Recover: rc}
		if _, err := guard.Launch(context.Background(), api, spec); err == nil || !strings.Contains(err.Error(), "Spec.Recover") {
			t.Errorf("%+v: %v, want a Spec.Recover field error", rc, err)
		}
	}
	if n := len(srv.Pods()); n != 0 {
		t.Errorf("%d pods made", n)
	}
}

// TestAttachRecoversWithSecrets: a Record never holds the job's secrets,
// so a Run attached with WithSecrets is what gives them to the job that a
// recovery starts on a new pod.
func TestAttachRecoversWithSecrets(t *testing.T) {
	t.Parallel()
	w := newRecoveryWorld(t)
	const token = "tok-attach-7f3a"
	w.spec.Job.Secrets = map[string]string{"RUN_TOKEN": token}
	// The job records whether it saw the token, never the token.
	w.spec.Job.Command = `if [ "$RUN_TOKEN" = ` + token + ` ]; then echo yes; else echo no; fi >> "$OVERBRAINER_OUTPUTS/saw_token"; sh train.sh`
	ctx := context.Background()
	first := w.launch(ctx)
	rec := first.Record()
	first.Close()

	run, err := guard.Attach(ctx, w.api, rec, append(w.options(), guard.WithSecrets(w.spec.Job.Secrets))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(run.Close)
	w.failHostAfterPull(rec.PodID)
	end, err := run.Follow(ctx, io.Discard)
	if err != nil || !end.OK() {
		t.Fatalf("Follow: %v, %v", end, err)
	}
	results := filepath.Join(w.dir, "results")
	if _, err := run.Collect(ctx, results); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(w.of(guard.EventRecovering)); n != 1 {
		t.Fatalf("%d recoveries, want 1", n)
	}
	// The first pod's line came with the pull; the second pod's job added
	// its own.
	b, _ := os.ReadFile(filepath.Join(results, "outputs", "saw_token"))
	if got := strings.Fields(string(b)); len(got) != 2 || got[0] != "yes" || got[1] != "yes" {
		t.Errorf("saw_token %q: want the job to see its secret on both pods", b)
	}
	if b, _ := os.ReadFile(filepath.Join(results, "record.json")); strings.Contains(string(b), token) {
		t.Error("the token is in the collected record")
	}
}

// tearingJob proves a whole checkpoint, then, once told (tear in its run
// directory), a checkpoint caught torn: snapshot.json says 8 bytes, the
// file holds 4; it ends once told (end).
const tearingJob = `out=$OVERBRAINER_OUTPUTS
run=$(dirname "$out")
printf good > "$out/ckpt"
printf '{"checkpoint": "ckpt", "step": 1, "bytes": 4}\n' > "$out/snapshot.json"
while [ ! -f "$run/tear" ]; do sleep 0.1; done
printf '{"checkpoint": "ckpt", "step": 2, "bytes": 8}\n' > "$out/snapshot.json"
printf torn > "$out/ckpt"
: > "$run/torn"
while [ ! -f "$run/end" ]; do sleep 0.1; done`

// TestPullKeepsTheLastGood: a pull that catches the job's checkpoint
// torn (not of the size its snapshot.json says) fails and never replaces the last good pull, which the next pod would resume
// from.
func TestPullKeepsTheLastGood(t *testing.T) {
	t.Parallel()
	w := newRecoveryWorld(t)
	if err := os.WriteFile(filepath.Join(w.spec.Job.Dir, "train.sh"), []byte(tearingJob+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.spec.Recover = guard.Recovery{}
	ctx := context.Background()
	run := w.launch(ctx)
	runDir := run.Record().RunDir
	on := func(script, file string) {
		t.Helper()
		if err := run.Exec(ctx, podssh.Command(script, runDir+"/"+file), nil, nil, nil); err != nil {
			t.Fatalf("%s %s: %v", script, file, err)
		}
	}
	waitFor := `while [ ! -f "$1" ]; do sleep 0.1; done`
	pulls := filepath.Join(w.dir, "pulls")
	pulled := func() string {
		b, _ := os.ReadFile(filepath.Join(guard.PulledOutputs(pulls), "ckpt"))
		return string(b)
	}
	on(waitFor, "outputs/snapshot.json")
	if _, err := run.Pull(ctx, pulls); err != nil || pulled() != "good" {
		t.Fatalf("first pull: %v, checkpoint %q", err, pulled())
	}
	on(`: > "$1"`, "tear")
	on(waitFor, "torn")
	if _, err := run.Pull(ctx, pulls); err == nil || !strings.Contains(err.Error(), "not whole") {
		t.Errorf("a pull of a torn checkpoint: %v, want it not whole", err)
	}
	if got := pulled(); got != "good" {
		t.Errorf("after the torn pull the outputs to resume from hold %q, want the last good pull's", got)
	}
	on(`: > "$1"`, "end")
	w.finish(ctx, run)
}

// TestPullBringsWhatTheExcludeLeavesInTheCheckpoint: an exclude that
// matches files inside the checkpoint directory snapshot.json names
// (Results.Exclude "*.pt") does not keep them out of a pull, which warns;
// the results' download still leaves them.
func TestPullBringsWhatTheExcludeLeavesInTheCheckpoint(t *testing.T) {
	t.Parallel()
	w := newRecoveryWorld(t)
	job := `out=$OVERBRAINER_OUTPUTS
mkdir -p "$out/ckpt" && echo weights > "$out/ckpt/model.pt" && echo '{}' > "$out/ckpt/config.json"
printf '{"checkpoint": "ckpt", "step": 1}\n' > "$out/snapshot.json"
while [ ! -f "$(dirname "$out")/end" ]; do sleep 0.1; done`
	if err := os.WriteFile(filepath.Join(w.spec.Job.Dir, "train.sh"), []byte(job+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.spec.Recover = guard.Recovery{}
	w.spec.Results.Exclude = []string{"*.pt"}
	ctx := context.Background()
	run := w.launch(ctx)
	runDir := run.Record().RunDir
	if err := run.Exec(ctx, podssh.Command(`while [ ! -f "$1" ]; do sleep 0.1; done`, runDir+"/outputs/snapshot.json"), nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	pulls := filepath.Join(w.dir, "pulls")
	if _, err := run.Pull(ctx, pulls); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(pulls, "latest", "outputs", "ckpt", "model.pt")); err != nil || string(b) != "weights\n" {
		t.Errorf("the pull lacks the checkpoint's excluded file: %q, %v", b, err)
	}
	warned := false
	for _, e := range w.of(guard.EventWarning) {
		warned = warned || strings.Contains(e.Err.Error(), `the exclude "*.pt" matches the checkpoint outputs/ckpt`)
	}
	if !warned {
		t.Errorf("no warning of the exclude: %v", w.of(guard.EventWarning))
	}
	if err := run.Exec(ctx, podssh.Command(`: > "$1"`, runDir+"/end"), nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	_, results := w.finish(ctx, run)
	if _, err := os.Stat(filepath.Join(results, "outputs", "ckpt", "model.pt")); err == nil {
		t.Error("the results hold the excluded file")
	}
}
