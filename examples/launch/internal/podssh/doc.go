// Package podssh is the launcher's SSH side: ed25519 keys in OpenSSH formats,
// a connection to a pod whose host key is pinned to the run's (a mismatch is
// an error, never a question), commands with their standard streams, and
// directory upload and download as tar streams over a session, so the pod
// needs no scp or sftp server, only sh and tar. A transfer in which no byte
// moved for StallAfter ends with ErrStalled, and a session whose context
// ended but whose server no longer answers takes its connection down with it:
// a frozen pod never holds the launcher.
package podssh
