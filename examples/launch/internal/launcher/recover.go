package launcher

import (
	"errors"
	"path/filepath"

	"github.com/overbrainer/overbrainer-go/guard"
)

// pullDir is where --pull-every keeps the outputs pulled during run id.
func (a *app) pullDir(id string) string { return filepath.Join(a.store.RunPath(id), "pulls") }

// recoverText says where and from what a recovered job goes on.
func recoverText(e guard.Event) string {
	if e.InPlace {
		return "the job starts again on the same pod " + e.PodID + ", from its outputs there (" + e.Remote +
			"): the pod's volume kept them, and no new pod is made"
	}
	return "a new pod takes the job up " + recoverFrom(e)
}

// recoverFrom says what a recovered job resumes from on a new pod.
func recoverFrom(e guard.Event) string {
	switch {
	case e.Remote != "":
		return "from its outputs on network volume " + e.VolumeID + " (" + e.Remote + ")"
	case e.Proof != nil:
		return "from " + proofText(*e.Proof) + " in the outputs " + e.Dir
	case e.Dir != "":
		return "from the outputs in " + e.Dir + " (no snapshot.json says which step)"
	}
	// No pull was made, or none held a file (or a whole checkpoint):
	// the event does not say which, so the words fit both.
	return "from its beginning: no pull of its outputs held anything to resume from " +
		"(a job keeps its checkpoints in $OVERBRAINER_OUTPUTS; --pull-every pulls them while it runs)"
}

// resumeText says what a job resumes from: the step its snapshot.json
// proves, when the outputs hold one.
func resumeText(dir string) string {
	p, err := guard.ReadSnapshotProof(dir)
	switch {
	case err == nil:
		return proofText(p) + " in the outputs " + dir
	case errors.Is(err, guard.ErrNoSnapshotProof):
		return "the outputs in " + dir + " (no snapshot.json says which step)"
	}
	return "the outputs in " + dir + " (" + err.Error() + ")"
}
