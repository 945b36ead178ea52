// Package runpodtest is an in-process fake of Runpod for tests, in the way
// of net/http/httptest and Google's pubsub pstest: a real HTTP server on
// 127.0.0.1 that speaks Runpod's REST v2 API (account secrets included; no
// GraphQL), backed by state a test can read and break, and an optional pod runner that
// really runs each created pod's command on this machine.
//
// # Setup
//
//	srv := runpodtest.NewTestServer(t)
//	client, err := runpod.New(srv.APIKey(), runpod.WithBaseURL(srv.BaseURL()))
//
// Any other client works the same way: srv.BaseURL() stands for
// https://api.runpod.io/v2 and srv.APIKey() for the account key. Then srv.Pods() and srv.Requests() show
// what the code under test did.
//
// NewTestServer closes the fake when the test ends and fails the test if a pod
// was left billing. NewServer is the same without a test (call Close).
//
// A package whose fake runs pods (WithPodRunner) lets the runner re-execute
// its test binary as each pod's init:
//
//	func TestMain(m *testing.M) { runpodtest.Main(m) }
//
// and a program calls localpod.PodInit first in main.
//
// # The API
//
// Under BaseURL (URL + "/v2"), with Authorization: Bearer <key>:
//
//	GET    /v2/pods                  ListPodsResponse {pods, pagination}, newest first; limit
//	                                 1..1000 (default 1000), a cursor valid only with the
//	                                 parameters that got it
//	GET    /v2/account/secrets       ListSecretsResponse; ?name= ignores case
//	POST   /v2/account/secrets       201 Secret, 409 for a taken name (ignoring case), 422 off the rule
//	GET    /v2/account/secrets/{id}  Secret (never its value)
//	PATCH  /v2/account/secrets/{id}  Secret; rotates the value
//	DELETE /v2/account/secrets/{id}  204
//	POST   /v2/pods                  201 Pod (PROVISIONING); args, entrypoint, cmd as Runpod stores
//	                                 them; 413 for a body over 102,400 bytes, 404 for a
//	                                 registry credential the account lacks (see AddRegistry)
//	GET    /v2/pods/{id}             Pod; TERMINATED for a while after a delete, then 404
//	DELETE /v2/pods/{id}             204, terminates the pod
//	POST   /v2/pods/{id}/action      start|stop|restart 200 Pod, terminate 204, 409 when not valid now
//	GET    /v2/pods/{id}/logs        the pod's log stream (see below)
//	GET    /v2/network-volumes       ListNetworkVolumesResponse
//	POST   /v2/network-volumes       201 NetworkVolume, 400 for a data center the fake lacks
//	GET    /v2/network-volumes/{id}  NetworkVolume
//	PATCH  /v2/network-volumes/{id}  NetworkVolume; a smaller size is 400
//	DELETE /v2/network-volumes/{id}  204, 409 while a pod mounts it
//	GET    /v2/catalog/gpus[/{id}]   ListGpuTypesResponse / GpuType; include=AVAILABILITY (with
//	                                 product: POD, CLUSTER and SERVERLESS share one stock) adds
//	                                 the stock, scoped by count, cloud, minCudaVersion or
//	                                 cudaVersions, and countryCodes (see DataCenter)
//	GET    /v2/catalog/cpus[/{id}]   ListCpuTypesResponse / CpuType: two flavors (cpu3c, cpu5c)
//	                                 at WithCPURate per vCPU, plenty of each in FAKE-LOCAL-1;
//	                                 a create takes any cpu.id
//	GET    /v2/catalog/datacenters   ListDataCentersResponse, filtered by regions, compliance,
//	                                 globalNetwork and networkVolumeTypes (WithDataCenters)
//	GET    /v2/catalog/datacenters/{id}  DataCenter
//	GET    /v2/billing/pods          ListPodBillingResponse: each pod's Bill cut into the query's
//	                                 buckets (UTC), lagging by WithBillingDelay
//	GET    /v2/registries            ListRegistriesResponse (AddRegistry adds one)
//	GET    /v2/openapi.json          the document itself, as Runpod serves its own
//
// A path the document does not have answers 404, a method its path lacks
// 405 (with Allow), and the document's other operations 501 (see What
// answers 501).
//
// Errors are RFC 9457 problem objects (title, status, detail, and errors for
// a 422), with the statuses of openapi_v2.json: 401 without a valid key, 403
// for a key without access, 404, 409, 400 for a request that breaks a rule
// (placement, a volume shrink), 422 for one that breaks the schema (every
// unknown member named, as the document's "$: additional properties
// 'bogus' not allowed"). Nothing answers under /graphql (404).
//
// testdata/openapi_v2.json is Runpod's OpenAPI document (its 2026-09
// version), the contract the fake follows. This module's tests hold every
// request the fake takes and every answer it gives to it, failing the test
// on an exchange off the document (WithMiddleware, with a validator that
// stays out of this package, so that a program embedding the fake links
// none).
//
// # Keys
//
// The account key (WithAPIKey, or generated: APIKey) may do everything. Each
// pod gets a pod-scoped key (its RUNPOD_API_KEY, see PodKey) that may read,
// delete and act on its own pod only: anything else, secrets included,
// answers 403.
//
// # State and faults
//
// Pods returns every pod with its status, env, bill and exit code; Requests
// the request log (method, path, headers, body, whose key, status), kept in
// memory only, Authorization header included so that a test can check the
// key a call used;
// Secrets, NetworkVolumes and PodLog the rest. WaitPod and WaitStatus wait
// for a pod's state without polling. Fail makes the next N calls to a path
// (optionally only a given caller's) answer a status with an optional
// Retry-After, hang, drop the connection, or run the call and then lose
// its answer (Lost). WithDrift makes the fake differ from its document the
// ways the live API may (a pod key's delete refused, a dashed placeholder
// unresolved, a lower 413 limit, 50 written 50.0, a member added or
// missing: in its answers and in the document it serves alike).
//
// A pod goes PROVISIONING → STARTING (for WithStartingDelay, without
// runtime or ports; default 0) → RUNNING → EXITED (stopped) → STARTING and
// RUNNING again (start), or TERMINATED (DELETE or terminate). A container
// whose command ends is started again after a back-off, as Runpod does
// (STARTING meanwhile, Pod.Restarts counting), unless WithExitedOnEnd
// makes it EXITED; ExitPod plays an API-only pod that exited by itself.
// AddPods seeds pods the account already has, many at once, with no
// request or process each: for tests of a large account.
// A terminated pod leaves the list at once; GET answers it TERMINATED for
// WithTerminatedVisible's while (default 2s), then 404, and Pods still
// shows it with its final bill. Every answer carries an X-Request-Id, the
// ID of its entry in Requests; with WithQuota, RateLimit and
// RateLimit-Policy headers and 429s as Runpod's. A pod bills
// its cost per hour (the GPU type's price for its cloud, times the count;
// see DefaultGPUTypes and WithGPUTypes) while RUNNING, and its persistent
// volume's price (WithVolumeRate) while stopped: stop is not delete. The
// clock that bills is WithClock's (see ManualClock).
//
// # The pod runner
//
// With WithPodRunner, creating a pod runs its command here, as the pod
// would. The command is the create's, given as entrypoint and cmd arrays or
// as args (a shell string, split into words with POSIX shell quoting by
// localpod.SplitArgs and used as CMD, or a JSON {"entrypoint", "cmd"} object),
// combined with the ENTRYPOINT and CMD of the pod's image by Docker's
// rules: an entrypoint replaces the image's ENTRYPOINT and drops its CMD;
// otherwise the image's ENTRYPOINT runs with the create's cmd (or the
// image's CMD) as its arguments, and may ignore them, as it would on
// Runpod. The fake knows an image only when a test names it (WithImage,
// Server.AddImage: its ENTRYPOINT, CMD, ENV and files); any other image
// has none of them, so the create must give the whole command.
// localpod.RunpodPyTorchImage stands in for Runpod's images (NVIDIA's
// entrypoint, Runpod's /start.sh).
// Pod.Argv shows what ran. That command runs (package localpod runs it,
// which the launcher's --local links without this fake's tests), as the
// container's main process, by an init of
// the fake's own (this binary, re-executed: its main, or its TestMain,
// calls localpod.PodInit first) that is PID 1 of new mount,
// PID, UTS (its hostname is RUNPOD_POD_HOSTNAME) and IPC namespaces, in a
// process group of its own. The command runs as root with Docker's default
// capabilities only (what a Runpod container has: no CAP_SYS_ADMIN, so no
// mount, no ptrace, no module or network administration), which its sshd
// needs no more than. Its root is an overlay of
// the host's / whose writes land in a tmpfs of the pod's disk size, with a
// /proc of its own, the host's /dev and /sys, a fresh /tmp, and empty tmpfs
// over /etc/ssh, /etc/overbrainer, /root (mode 0700) and the pod's workdir
// (its OVERBRAINER_WORKDIR), each unless it lies on a volume: nothing the
// pod writes changes the host, a path missing on the host (/workspace) is
// created in the overlay only, and the pod's home starts empty, without the
// host's dotfiles and keys (a host .bashrc that runs pyenv or conda init
// would slow every SSH session into the pod). A persistent volume is a host
// directory of its own, kept across stop and start; a network volume
// (AddNetworkVolume) is a host directory shared by every pod that mounts it.
// The fake's own directory (other pods' disks and volumes) and the
// directories of WithHiddenDirs (a launcher's state) are hidden under empty
// tmpfs.
//
// That is all it isolates: a pod shares the host's network (and so its
// loopback services), users, cgroups (no CPU or memory limit), /dev and
// /sys, and reads every host file not named above through the overlay. It
// keeps a test's pods from changing the host and from each other's files,
// not a hostile command from the host: run only commands you would run here.
//
// The fake keeps its files in a runpodtest-* temporary directory that
// Close removes; one left by a process that was killed is removed by the
// next NewServer, once its owner is provably gone.
//
// The command's env is PATH and HOME, the pod's env with its
// {{ RUNPOD_SECRET_<name> }} placeholders resolved, as the pod boots, from
// the account secrets (POST /v2/account/secrets or AddSecret),
// then RUNPOD_POD_ID, a pod-scoped RUNPOD_API_KEY, RUNPOD_PUBLIC_IP=127.0.0.1,
// RUNPOD_TCP_PORT_22 and OVERBRAINER_SSH_PORT (a free port, which the pod
// reports as its mapping of port 22; see below), RUNPOD_POD_HOSTNAME,
// RUNPOD_DC_ID, RUNPOD_GPU_COUNT, OVERBRAINER_API_URL = BaseURL and
// OVERBRAINER_SSH_LISTEN=127.0.0.1 (the pod shares the host's network, so its
// sshd listens on loopback only); nothing of the test process's own env. It
// reaches the command through a pipe, never a command line or a file. The
// command's output goes to PodLog, keys and secrets redacted. A pod whose
// delete fallbacks could leave the machine with its key (an
// OVERBRAINER_API_URL off loopback, a runpodctl on its PATH) does not
// start: it goes to ERROR, saying why.
//
// A pod's port is reserved for it, across every Server of the process, from
// its start until its processes are gone and it no longer shows the port
// (EXITED, ERROR, TERMINATED, or a new port on restart): two pods of the
// process never share one, however many start at once (an API-only pod's
// port is reserved the same way, though nothing listens there). The socket
// that found the port free stays bound until the pod's init runs the
// command, so no other process can take the port before then either; from
// there to the bind of the pod's sshd (the bootstrap's first seconds),
// another process that binds that very port (a fake in another test binary,
// say) could still win it.
//
// Stop and restart send SIGTERM and kill after WithStopGrace; DELETE, terminate and
// Close kill the process group and the namespace's init, which takes down
// everything in the namespace (sshd too), and return once it is all gone.
// If the test process dies, the kernel kills its pods (Pdeathsig).
//
// The runner needs root on Linux (localpod.Check says so; a pod created
// without it goes to ERROR with that reason). Without WithPodRunner, pods
// are API state only, and ExitPod plays a command that ends.
//
// # Where the fake differs from Runpod
//
//   - Provisioning is immediate (or WithProvisioningDelay), STARTING lasts
//     WithStartingDelay (0 by default); there is no capacity shortage
//     unless a fault makes one, and no image but those a test adds: a pod
//     runs on the host's files, plus the image's own files when it has any.
//   - A restarted container gets a fresh overlay: only volumes keep files
//     across it. Time spent STARTING does not bill in Bill.RunSeconds.
//   - A pod's network is the host's: there is no port mapping, its sshd
//     listens on the port it reports as public (on every address the
//     bootstrap asks for), and the pod reaches the fake on 127.0.0.1.
//     ssh.proxy is always null. The port is one of this machine's: no
//     other pod of the process gets it, but between the command's start
//     and its sshd's bind another process could (see the pod runner).
//     runtime.ports lists that port 22 mapping and each http port (with
//     a null public port, as Runpod's proxy serves it, at 127.0.0.1 on
//     its own number); other tcp and udp ports are not listed.
//   - A pod's /root is empty and private (Runpod's is the image's), and its
//     other files are the host's, under an overlay.
//   - A secret the env names but the fake lacks is left as the placeholder.
//   - Some of the document's operations are not served (see What answers
//     501). Network volume quotas and gpu.allowedCudaVersions are not
//     enforced; RateLimit headers are sent only with WithQuota.
//   - A pod's log stream (GET /v2/pods/{id}/logs, Server-Sent Events)
//     carries its command's output as container lines; there are no system
//     lines (source=system streams nothing). It ends when the pod is
//     terminated.
//   - Pod-scoped keys are the fake's model of Runpod's scoped keys: own pod
//     only, including its actions; GraphQL refuses them.
//   - Prices are illustrative, and billing is continuous (per second), not
//     Runpod's per-minute rounding. Terminated pods stay in Pods.
//
// # What answers 501
//
// These operations of the document are not served: each answers 501 (for
// the account key; a pod's key gets 403, as everywhere but its own pod).
//
//	GET, PUT                     /v2/account/ssh-keys
//	PATCH                        /v2/pods/{id}
//	GET, POST                    /v2/clusters
//	GET, PATCH, DELETE           /v2/clusters/{id}
//	GET                          /v2/clusters/{id}/pods
//	GET, POST                    /v2/serverless
//	GET, PATCH, DELETE           /v2/serverless/{id}
//	GET                          /v2/serverless/{id}/workers
//	GET                          /v2/serverless/{id}/releases
//	GET                          /v2/serverless/{id}/builds
//	GET                          /v2/serverless/{id}/builds/{buildId}
//	GET                          /v2/serverless/{id}/workers/{workerId}/logs
//	GET, POST                    /v2/templates
//	GET, PATCH, DELETE           /v2/templates/{id}
//	POST                         /v2/registries
//	GET, DELETE                  /v2/registries/{id}
//	GET, POST                    /v2/registries/delegations
//	DELETE                       /v2/registries/delegations/{id}
//	GET                          /v2/catalog/templates
//	GET                          /v2/billing
//	GET                          /v2/billing/serverless
//	GET                          /v2/billing/endpoints
//	GET                          /v2/billing/network-volumes
//	GET                          /v2/billing/clusters
package runpodtest
