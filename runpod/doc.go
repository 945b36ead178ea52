// Package runpod is a client for Runpod's REST v2 API
// (https://api.runpod.io/v2): GPU pods, pod actions, network volumes, the
// GPU catalog, account secrets, container registry credentials (to pull a
// private image) and the pods' billing. It speaks no GraphQL.
//
// Make a client with New and an API key; every method takes a context:
//
//	c, err := runpod.New(os.Getenv("RUNPOD_API_KEY"))
//	pod, err := c.CreatePod(ctx, runpod.CreatePodRequest{
//		Name:       "overbrainer-" + runID,
//		Image:      "runpod/pytorch:1.0.2-cu1281-torch280-ubuntu2404",
//		GPUTypeID:  "NVIDIA GeForce RTX 4090",
//		Ports:      []string{"22/tcp"},
//		Entrypoint: []string{"bash", "-c"},
//		Cmd:        []string{script},
//	})
//	...
//	res, err := c.DeletePod(ctx, pod.ID)
//
// # Deleting
//
// A pod that is not deleted keeps billing. DeletePod tries DELETE, then the
// terminate action, then the stop action, and says which worked (Deleted,
// Terminated, Stopped); a step counts only once GET shows the pod gone (404
// or TERMINATED; EXITED after the stop), since the API answers 404 to a key
// that may not see the pod too. Stopped is not a success: the pod's disk still
// bills, and DeletePod returns an error matching ErrStillBilling with it.
// DeletePods does the same for many pods concurrently.
//
// # Errors and retries
//
// A non-2xx answer is an *APIError, read from Runpod's RFC 9457 problem
// document, or from the raw body (at most 1 MiB) when there is none, as
// with a proxy's HTML 502. errors.Is matches it against ErrNotFound,
// ErrUnauthorized, ErrForbidden, ErrRateLimited and ErrConflict.
//
// Reads, deletes, PATCH and pod actions are retried on transport errors,
// 429, 502, 503 and 504, with exponential backoff and jitter, never sooner
// than a Retry-After header (seconds or HTTP-date) asks, never longer than
// the cap set by WithRetry. A 429 waits for the later of its Retry-After
// and the exhausted window of its RateLimit header that resets last; when
// that is past the cap, the call (any call: DeletePod does not fall back
// to terminate or stop then) fails at once with a *RateLimitError
// (ErrRateLimited) that says how long to wait, instead of spending its
// attempts. Creating a pod is never retried blindly: before
// sending the create again, CreatePod looks for the pod by name, so one call
// makes at most one pod. A cancelled context ends any call at once with
// ctx.Err(), during a backoff too.
//
// Before a 429 comes, the client paces itself (see WithPacing): it counts
// its requests against the quota that the RateLimit and RateLimit-Policy
// headers of each answer announce, and holds a request back until its
// window resets rather than spend it on a 429. The clients of one key in a
// process share that count.
//
// The API key travels only in the Authorization header. It never appears in
// an error, a log line or a debug dump (see WithDebug), and neither does a
// secret's value. The client follows no redirect (an error wrapping
// ErrRedirect), so neither the key nor a request body is sent anywhere but
// to the configured URLs.
//
// # The start command
//
// A container runs its ENTRYPOINT followed by its CMD. REST v2 sets them
// with the create's entrypoint and cmd arrays (CreatePodRequest.Entrypoint
// and Cmd), or with args, one string that Runpod stores: a shell string
// used as CMD, or a JSON {"entrypoint": [...], "cmd": [...]}. Every read
// returns args as stored and the two arrays (Pod.Entrypoint, Pod.Cmd).
// The image's own pair combines with them by Docker's rules: an
// Entrypoint replaces the image's ENTRYPOINT and clears its CMD, so the
// container runs exactly Entrypoint+Cmd; a Cmd alone (or Command, or a
// shell string in args) replaces only the CMD, which then runs as the
// arguments of the image's ENTRYPOINT, if it has one.
//
// That second form leaves the command at the mercy of the image: an
// ENTRYPOINT that ends in exec "$@" (NVIDIA's CUDA images:
// /opt/nvidia/nvidia_entrypoint.sh) runs it, one that ignores its
// arguments (a server's own start script, /bin/sh -c "..." in shell form)
// never does, and the pod runs without it. A guarded pod (package guard)
// therefore sends its bootstrap as Entrypoint ["bash", "-c"] and Cmd
// [script], and the image's ENTRYPOINT never runs. What that entrypoint
// would have done for the job, the bootstrap gets back itself: see
// "The image's entrypoint" in package bootstrap.
//
// Both arrays travel as JSON arrays, each word escaped once; the client
// never encodes them into args itself, which would escape a script twice
// and nearly double it against Runpod's 102,400-byte limit on a create
// body. Command is the older form: words rendered into args with QuoteArgs,
// each in single quotes, on the assumption that Runpod splits a shell
// string by POSIX shell quoting rules without running a shell. It may not
// be combined with Entrypoint or Cmd. SplitArgs is its inverse, for fakes
// and for reading an older pod's Args back; Pod.Command returns the words
// of either form.
//
// # Secrets
//
// CreateSecret, UpdateSecretValue, DeleteSecret, ListSecrets and FindSecret
// use REST v2's account secrets (/v2/account/secrets), under the same base
// URL and key as every other call. A pod's env value
// "{{ RUNPOD_SECRET_<name> }}" is replaced by the secret at boot. A name
// must follow Runpod's rule (CheckSecretName: SecretNameRule, at most 191
// characters, not starting with RUNPOD in any case) and a value hold 1
// byte to 16 MiB of UTF-8; either is refused before any request. The value
// is write-only: it travels only in a create's or a rotation's body, is
// never returned, and never appears in an error, a log line or a dump.
// CreateSecret on a taken name (409: a crashed earlier try of the same
// run) rotates that secret's value and returns it; DeleteSecret of a
// secret already gone is a success. CreateSecretWithDescription also sets
// a description (at most 65,535 bytes), which ListSecrets returns: a
// guarded run states there how long it needs its secret (podenv's
// HostKeySecretDescription).
//
// Two questions Runpod's document leaves open, and what this package
// assumes:
//
//   - Does a secret name's uniqueness ignore case? The ?name= filter does.
//     The client assumes it may, and fails safe: FindSecret returns only a
//     secret of exactly the name asked, and CreateSecret rotates only such
//     a secret; a 409 caused by a name spelt otherwise is an ErrConflict
//     error, and nothing is changed or deleted. (The fake in runpodtest
//     takes names as unique ignoring case.)
//   - Does a pod's own key (RUNPOD_API_KEY) see /v2/account/secrets? The
//     code assumes not and never needs it: secrets are made and deleted
//     with the account key, by the launcher and the sweeps; the pod gets
//     its host key through the placeholder at boot. Were a pod's key to
//     see them, it would see names only (values are write-only), and the
//     job's environment holds no key at all. The fake answers 403.
//
// The package keeps its HTTP library (resty) out of its API.
package runpod
