// Command notebook is a guarded run laid out as notebook cells, one function
// a cell, for Go kernels such as gonb that compile and run each cell as a
// new program: nothing but files passes from one cell to the next, so every
// cell after the first rebuilds the run from the Record the first one saved.
//
//	launch   cell 1: a pod for the demo job, its Record saved on the way
//	start    cell 2: Attach from the Record, start the job, leave it running
//	follow   cell 3: Attach, print the job's output until it ends, Collect
//	remove   cell 4: Remove the pod and its secret, from the Record alone
//
// Everything the cells hand over is in ./overbrainer-notebook: record.json
// (mode 0600: it holds the run's client key, so keep it out of a shared
// notebook), the demo job and the results. The repository's .gitignore
// keeps that directory out of a commit when the cells run in a checkout. Between two cells the pod's
// watchdog guards it: a job not started within 30 minutes, the deadline an
// hour after the launch, or collected results end it, whether or not a cell
// ever runs again. Cell 4 works without connecting to the pod, since the
// watchdog may have deleted it already once cell 3 collected the results.
// A cell that fails prints why and exits 1; guard has then deleted the pod,
// or left it to its armed watchdog. Ctrl-C (an interrupted cell) ends a
// cell the same way.
//
// # The API
//
// With RUNPOD_API_KEY (an account key, never sent to the pod) the cells use
// Runpod, or the Runpod emulator that OVERBRAINER_API_URL points at (the
// launcher's variable). Without it,
// main starts the local emulator of runpod/runpodtest in its own process,
// whose pods really run on this machine (as root, with bash, sshd, curl,
// setsid and tar), and runs all four cells there, each from the Record file
// as a new program would:
//
//	go run ./examples/notebook
//
// It exits 0 once the pod is deleted.
//
// # In gonb
//
// gonb (github.com/janpfeifer/gonb) compiles each cell that holds Go code
// into a new program in its own module, in $GONB_TMP_DIR, keeping the
// cell's declarations (imports, variables, functions) for the later cells
// and wrapping the statements after a %% line in a new func main. Before
// it compiles such a cell it runs goimports and then "go get", with no
// arguments, in that module (%autoget, the default). Lines starting with !
// run in a shell first; !* runs them in $GONB_TMP_DIR, where the module's
// go.mod is. A cell of such lines alone (special commands, shell lines)
// compiles and runs no Go at all. Hence these cells, one for each step:
//
// 1. The module, in a cell of its own. For a checkout of this repository,
// both flags in one go mod edit, since a replace alone is not enough:
// gonb's "go get" then looks the module up on the module proxy (no
// version of it is required) and fails the next cell:
//
//	!*go mod edit -require=github.com/overbrainer/overbrainer-go@v0.0.0 -replace=github.com/overbrainer/overbrainer-go=/path/to/checkout
//
// (for a published version, !*go get github.com/overbrainer/overbrainer-go@VERSION
// instead), and the API's variables in the same cell (see below).
//
// 2. The declarations: main.go's imports and declarations, pasted into one
// cell, all but func main and the runpodtest import only main uses. gonb
// compiles them with a stub main, which does nothing.
//
// 3. to 6. One cell per step, each a %% line and the call:
//
//	%%
//	launch()
//
// then the same with start(), follow() and remove(). Not "%exec launch"
// alone in a cell: gonb compiles no cell without Go code in it, so nothing
// would run.
//
// The cells run in gonb's current directory (%cd), where the Record file
// stays. Each one first checks that the API answers, within seconds: a
// cell whose emulator or API is gone fails at once, saying so, instead of
// waiting 20 minutes for the pod.
//
// Outside a notebook, "go run ./examples/notebook start" runs one cell (or
// several, in the order named) as gonb would, each a program of its own.
//
// Each cell being a program of its own, an emulator in it would end with
// the cell, and its pod with it: a local emulator must outlive the cells.
// Start one in a terminal, as root:
//
//	go run ./examples/launch local-server
//
// It writes its URL and account key to local-server.json in the launcher's
// state directory ($OVERBRAINER_STATE_DIR, else
// ~/.config/overbrainer/launch), mode 0600, which runpodtest.FindShared
// reads. Give them to the cells before the first one runs, with %env
// RUNPOD_API_KEY <key> and %env OVERBRAINER_API_URL <url>/v2. For Runpod
// itself, start Jupyter with RUNPOD_API_KEY in its environment rather than
// writing the key into the notebook.
package main
