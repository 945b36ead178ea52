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
// notebook), the demo job and the results. Between two cells the pod's
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
// gonb keeps a cell's declarations (imports, variables, functions) for the
// later cells and wraps the statements after %% in a new main at each run.
// So: get the module (!*go get github.com/overbrainer/overbrainer-go@latest,
// or for a checkout !*go mod edit -replace
// github.com/overbrainer/overbrainer-go=/path/to/checkout), paste main.go's
// imports and declarations into one cell (all but func main, and the
// runpodtest import only main uses), then run one cell per step:
//
//	%%
//	launch()
//
// then start(), follow() and remove() in three more %% cells (or %exec
// launch, and so on). They run in gonb's current directory (%cd), where the
// Record file stays.
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
