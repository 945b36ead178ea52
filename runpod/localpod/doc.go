// Package localpod runs a pod's command on this machine as a Runpod
// container would run it: the local pod runtime behind runpodtest's pod
// runner (WithPodRunner) and the launcher's --local and local-server.
// It knows nothing of the API: runpodtest decides when a pod runs and
// what its env is; localpod runs it.
//
// Start runs one pod: an init of its own, this very binary re-executed,
// is PID 1 of new mount, PID, UTS and IPC namespaces, builds the pod's root
// (an overlay of the host's / over a tmpfs of the pod's disk size, with
// the Spec's mounts and hidden directories), drops to Docker's default
// capabilities and runs the command, forwarding signals and reaping
// orphans. A binary that runs local pods therefore calls PodInit first
// thing in main (a test binary, in TestMain: runpodtest.Main does):
//
//	func main() {
//		localpod.PodInit()
//		...
//	}
//
// Check says whether this machine can run pods (Linux, as root), and
// EnsureTools installs the programs a pod's bootstrap needs where it
// can. Image, ContainerArgv and SplitArgs give the container's command
// as Docker and Runpod form it; CheckFallbacks refuses a pod whose
// delete fallbacks could leave this machine.
//
// The package imports no test framework: the launcher links it.
package localpod
