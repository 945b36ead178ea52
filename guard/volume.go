package guard

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/overbrainer/overbrainer-go/internal/costplan"
	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// Filling warnings start at fillFirst percent of the volume's usable part
// and come again every fillStep.
const (
	fillFirst = 85
	fillStep  = 5
)

// volumePercent is how full a volume of sizeGB holding usedKiB is, in
// percent of its usable part (as the watchdog counts it).
func volumePercent(sizeGB int, usedKiB int64) int {
	if sizeGB <= 0 {
		return 0
	}
	return int(float64(usedKiB) * 1024 * 100 / (costplan.VolumeUsable * float64(sizeGB) * 1e9))
}

// tellFilling warns at fillFirst percent, then at each fillStep more: a
// network volume bills every month, whether a pod runs or not.
func (r *Run) tellFilling(usedKiB int64) {
	pct := volumePercent(r.rec.VolumeGB, usedKiB)
	if pct < fillFirst {
		return
	}
	step := fillFirst + (pct-fillFirst)/fillStep*fillStep
	if step <= r.filledWarned {
		return
	}
	r.filledWarned = step
	r.emit(Event{Kind: EventVolumeFilling, VolumeID: r.rec.NetworkVolumeID, FromGB: r.rec.VolumeGB,
		ToGB: r.rec.MaxVolumeGB, UsedBytes: usedKiB * 1024, Percent: step})
}

// growVolume grows the network volume when it is GrowAt full, up to the
// run's MaxVolumeGB, and tells the watchdog its new size. A volume that
// may not grow, or whose growth failed, asks the job for a disk snapshot
// at once: a checkpoint now beats a job ended by a full disk.
func (r *Run) growVolume(ctx context.Context, st jobctl.State) {
	newGB, grow := costplan.Grow(r.rec.VolumeGB, st.DuKiB)
	if !grow {
		return
	}
	limit := min(r.rec.MaxVolumeGB, runpod.MaxVolumeGB)
	var why error
	switch {
	case r.rec.MaxVolumeGB <= 0:
		why = errors.New("it may not grow (no largest size was set)")
	case r.rec.VolumeGB >= limit:
		why = fmt.Errorf("it is %d GB, the largest it may grow to", r.rec.VolumeGB)
	default:
		if err := r.growTo(ctx, min(newGB, limit), st.DuKiB); err != nil {
			why = fmt.Errorf("growing it failed: %w", err)
		}
	}
	if why == nil || r.diskAsked {
		// Told once: the job has its request.
		return
	}
	then := "a snapshot is requested already"
	if st.Request == "" {
		if err := r.put(ctx, watchdog.SnapshotRequest, string(watchdog.ReasonDisk)); err != nil {
			// Tried again at the next measure.
			r.warn(fmt.Errorf("network volume %s is full and %w; asking the job for a disk snapshot: %w", r.rec.NetworkVolumeID, why, err))
			return
		}
		then = "the job is asked for a disk snapshot"
	}
	r.diskAsked = true
	r.warn(fmt.Errorf("network volume %s is full (%d%% of its usable part) and %w: %s", r.rec.NetworkVolumeID,
		volumePercent(r.rec.VolumeGB, st.DuKiB), why, then))
}

// growTo grows the network volume to newGB and tells the watchdog.
func (r *Run) growTo(ctx context.Context, newGB int, usedKiB int64) error {
	v, err := r.api.GrowNetworkVolume(ctx, r.rec.NetworkVolumeID, newGB)
	if err != nil {
		return err
	}
	if err := r.put(ctx, watchdog.VolumeGB, strconv.Itoa(v.SizeGB)); err != nil {
		return err
	}
	r.emit(Event{Kind: EventVolumeGrown, VolumeID: r.rec.NetworkVolumeID, FromGB: r.rec.VolumeGB, ToGB: v.SizeGB, UsedBytes: usedKiB * 1024})
	r.rec.VolumeGB = v.SizeGB
	// A bigger volume is less full: its warnings start again.
	r.filledWarned = 0
	r.save()
	return nil
}
