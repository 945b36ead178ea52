package guard

import "github.com/overbrainer/overbrainer-go/runpod"

// runPods sorts a listing by the run's pod name: mine is the pods that
// are the run's, named so and with an id, read whole or not (see
// runpod.Pod.Unreadable); unknown is the first listed pod whose name or
// id could not be read, which may be the run's too, and which nothing
// can be done to: it is neither gone nor a pod to adopt.
func (r *Run) runPods(pods []runpod.Pod) (mine []runpod.Pod, unknown error) {
	for _, p := range pods {
		switch {
		case p.Name == r.rec.PodName && p.ID != "":
			mine = append(mine, p)
		case p.Unreadable != nil && unknown == nil:
			unknown = p.Unreadable
		}
	}
	return mine, unknown
}
