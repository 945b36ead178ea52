// Package localport says where a test server's port is picked when it
// cannot be handed a listening socket (a pod's sshd): below the kernel's
// ephemeral range, so that the outgoing connections of a busy machine,
// which take their ports from that range, do not take it before the server
// binds it.
package localport
