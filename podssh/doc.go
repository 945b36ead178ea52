// Package podssh is the client's SSH to a guarded pod: ed25519 keys in
// OpenSSH formats, a connection whose host key is pinned to the run's (a
// mismatch is an error, never a question: no trust on first use), commands with their standard streams,
// interactive sessions with a PTY that follows the local terminal's size
// (Shell, AttachTerminal), and directory upload and download as tar streams over a session, so the pod
// needs no scp or sftp server, only sh and tar. A download writes through
// an os.Root only the names it asked for, stops at its cap, and checks
// every file against the SHA-256 manifest the pod sends first. Progress
// (a DownloadRequest's, a Counter's for an upload) is told the bytes moved
// so far and the total counted before the first one. A transfer in which no byte
// moved for Target.StallAfter ends with ErrStalled, and a session whose context
// ended but whose server no longer answers takes its connection down with it:
// a frozen pod never holds its client.
//
// guard uses it for every run; a program can also use it on its own, with a
// run's client key and host key from a guard.Record, to run a command or
// open a shell on the run's pod.
package podssh
