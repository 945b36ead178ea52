package guard

import (
	"context"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/overbrainer/overbrainer-go/internal/costplan"
	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// A network volume past GrowAt of its usable part grows to costplan's
// size, up to the Spec's MaxVolumeGB (none: no growth) and Runpod's
// largest, and the watchdog is told. One that may not grow, or whose grow
// fails, warns and asks the job for a disk snapshot at once, unless a
// request is there; the job goes on.
func TestFollowGrowsTheVolume(t *testing.T) {
	// mark is the usage in KiB at which a volume of gb is full enough to grow.
	mark := func(gb int) int64 {
		return int64(math.Ceil(costplan.GrowAt * costplan.VolumeUsable * float64(gb) * 1e9 / 1024))
	}
	for _, tc := range []struct {
		name          string
		sizeGB, maxGB int
		used          int64
		request       watchdog.SnapshotReason // on the pod already
		growErr       error
		wantGB        int  // 0: no grow
		disk          bool // the job is asked for a disk snapshot
	}{
		{name: "below the mark", sizeGB: 100, maxGB: 200, used: mark(100) - 1},
		{name: "at the mark", sizeGB: 100, maxGB: 200, used: mark(100), wantGB: 125},
		{name: "up to its largest size", sizeGB: 100, maxGB: 110, used: mark(100), wantGB: 110},
		{name: "no largest size", sizeGB: 100, used: mark(100), disk: true},
		{name: "no largest size, a request there", sizeGB: 100, used: mark(100), request: watchdog.ReasonDeadline},
		{name: "at its largest size", sizeGB: 110, maxGB: 110, used: mark(110), disk: true},
		{name: "past what Runpod allows", sizeGB: 4000, maxGB: runpod.MaxVolumeGB, used: mark(4000), wantGB: runpod.MaxVolumeGB},
		{name: "at Runpod's largest", sizeGB: runpod.MaxVolumeGB, maxGB: runpod.MaxVolumeGB, used: mark(runpod.MaxVolumeGB), disk: true},
		{name: "the grow fails", sizeGB: 100, maxGB: 200, used: mark(100), growErr: errors.New("fake: 500"), disk: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full := running
			full.DuKiB, full.Request = tc.used, tc.request
			h := newHarness(t, look{st: ready}, look{st: full}, look{st: full}, look{st: exited(0)})
			h.api.volumes["vol-1"] = tc.sizeGB
			h.api.growErr = tc.growErr
			spec := h.spec()
			spec.NetworkVolumeID, spec.MaxVolumeGB = "vol-1", tc.maxGB
			r := h.mustStart(spec)
			end, err := r.Follow(context.Background(), io.Discard)
			if err != nil || !end.OK() {
				t.Fatalf("Follow = %v, %v", end, err)
			}
			var grows []string
			for _, c := range h.api.allCalls() {
				if strings.HasPrefix(c, "GrowNetworkVolume") {
					grows = append(grows, c)
				}
			}
			var wantGrows []string
			var wantPuts []putCall
			wantGB := tc.sizeGB
			if tc.wantGB > 0 || tc.growErr != nil {
				g, _ := costplan.Grow(tc.sizeGB, tc.used)
				g = min(g, tc.maxGB)
				if tc.wantGB > 0 && g != tc.wantGB {
					t.Fatalf("costplan.Grow and the limit say %d GB, the table %d", g, tc.wantGB)
				}
				wantGrows = []string{"GrowNetworkVolume vol-1 " + strconv.Itoa(g)}
			}
			if tc.wantGB > 0 {
				wantGB = tc.wantGB
				wantPuts = []putCall{{watchdog.VolumeGB, strconv.Itoa(tc.wantGB)}}
				es := h.eventsOf(EventVolumeGrown)
				if len(es) != 1 || es[0].FromGB != tc.sizeGB || es[0].ToGB != tc.wantGB || es[0].UsedBytes != tc.used*1024 {
					t.Errorf("volume events %+v", es)
				}
			}
			if tc.disk {
				wantPuts = []putCall{{watchdog.SnapshotRequest, string(watchdog.ReasonDisk)}}
			}
			if diff := cmp.Diff(wantGrows, grows); diff != "" {
				t.Errorf("grows (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantPuts, h.pod.allPuts()); diff != "" {
				t.Errorf("puts (-want +got):\n%s", diff)
			}
			if got := r.Record().VolumeGB; got != wantGB {
				t.Errorf("record's volume %d GB, want %d", got, wantGB)
			}
			warned := len(h.eventsOf(EventWarning)) > 0
			if want := tc.wantGB == 0 && tc.used >= mark(tc.sizeGB); warned != want {
				t.Errorf("warned %v, want %v: %v", warned, want, h.eventsOf(EventWarning))
			}
		})
	}
}

// A filling network volume is told at 85% of its usable part and at each
// 5% after, once each; a grown one starts again.
func TestFollowTellsAFillingVolume(t *testing.T) {
	at := func(gb int, pct float64) jobctl.State {
		s := running
		s.DuKiB = int64(math.Ceil(pct / 100 * costplan.VolumeUsable * float64(gb) * 1e9 / 1024))
		return s
	}
	h := followOnAVolume(t, look{st: ready}, look{st: at(100, 80)}, look{st: at(100, 85)}, look{st: at(100, 86)},
		look{st: at(100, 89)}, look{st: at(100, 90)}, look{st: at(100, 91)}, look{st: exited(0)})
	var pcts []int
	for _, e := range h.eventsOf(EventVolumeFilling) {
		pcts = append(pcts, e.Percent)
		if e.VolumeID != "vol-1" || e.FromGB != 100 || e.ToGB > e.FromGB {
			t.Errorf("event %+v: it may not grow", e)
		}
	}
	if diff := cmp.Diff([]int{85, 90}, pcts); diff != "" {
		t.Errorf("filling percents (-want +got):\n%s", diff)
	}
}

// A full volume that may not grow is told, and its snapshot asked, once:
// not at each measure after.
func TestAFullVolumeIsToldOnce(t *testing.T) {
	full := running
	full.DuKiB = int64(math.Ceil(costplan.GrowAt * costplan.VolumeUsable * 100 * 1e9 / 1024))
	looks := []look{{st: ready}}
	for range 100 { // more than three minutes of looks
		looks = append(looks, look{st: full})
	}
	h := followOnAVolume(t, append(looks, look{st: exited(0)})...)
	if n, puts := len(h.eventsOf(EventWarning)), h.pod.allPuts(); n != 1 || len(puts) != 1 {
		t.Errorf("%d warnings and puts %v, want one of each", n, puts)
	}
}

// followOnAVolume follows a run on a network volume of 100 GB that may not
// grow, through looks.
func followOnAVolume(t *testing.T, looks ...look) *harness {
	t.Helper()
	h := newHarness(t, looks...)
	h.api.volumes["vol-1"] = 100
	spec := h.spec()
	spec.NetworkVolumeID = "vol-1"
	if _, err := h.mustStart(spec).Follow(context.Background(), io.Discard); err != nil {
		t.Fatal(err)
	}
	return h
}
