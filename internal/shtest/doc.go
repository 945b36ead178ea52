// Package shtest runs POSIX shell scripts under every shell the project
// supports, against real commands and a real HTTP fake, for scenario tests.
//
// Shells. [All] lists sh, dash, busybox sh, bash, posh, yash and mksh, each
// looked up once on PATH. [ForEach] runs one parallel subtest per shell and
// [ForShells] does the same for a subset by name. A shell that is not
// installed skips its subtest, unless the environment sets REQUIRE_SHELLS=1
// (as CI does): then the subtest fails. [NeedTool] applies the same policy to
// other commands (curl, shellcheck, ...).
//
//	shtest.ForShells(t, []string{"dash", "bash"}, func(t *testing.T, sh shtest.Shell) {
//		bin := shtest.NewBin(t)
//		df := bin.Stub("df", `echo "fs 100 97 3 97% /"`)
//		p := shtest.Start(t, sh, script, shtest.Opts{
//			Bin: bin,
//			Env: map[string]string{"OVERBRAINER_DF": df},
//		})
//		p.Wait(t, time.Minute)
//	})
//
// Processes. [Start] writes the script to a file outside the run directory
// and runs it as `<shell argv> <file> <args>` in the run directory (a fresh
// temporary directory unless [Opts.Dir] says otherwise), with a clean
// environment: PATH (the stub directory first, then the system directories),
// HOME and TMPDIR pointing at private temporary directories, and exactly the
// variables in [Opts.Env]. The process leads its own process group; when the
// test ends the whole group is killed with SIGKILL and reaped, so background
// children (a hung du, a curl waiting on a hanging server) never outlive the
// test. Standard output and error go to files outside the run directory and
// are read with [Proc.Stdout] and [Proc.Stderr]. [Run] is Start plus Wait.
//
// Stubs. [Bin] is a directory of stub commands placed first on PATH.
// [Bin.Stub] writes an executable `#!/bin/sh` script and returns its path, so
// a command that a shell would run as a builtin or an applet whatever PATH
// says (busybox's df and du, for instance) can be passed to the script by
// path instead. [Bin.Clock] installs `date` and `sleep` stubs driven by a
// file, for a controllable clock under the shells that honour PATH for them.
//
// HTTP. [NewFakeAPI] starts an httptest server on 127.0.0.1 that records every
// request (method, path, body, Authorization header, time) and answers from,
// in order: a custom [FakeAPI.Handle] function, a queue of scripted answers
// per method and path ([FakeAPI.Queue]), a default per method and path
// ([FakeAPI.SetDefault]), else 200 (204 for DELETE). An [Answer] can carry any
// status and body, hang for a while or until the test ends, or drop the
// connection without a response. [FakeAPI.WaitFor] polls the recorded
// requests until a predicate holds.
//
// Polling. [Eventually] and [WaitFile] poll with a deadline instead of
// sleeping and asserting, which keeps tests robust on a loaded machine.
//
// Shtest is a test kit, like those under internal/testkit: only tests
// import it. It stays at internal/shtest because the design card places
// it there.
package shtest
