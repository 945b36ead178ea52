// Package state keeps the launcher's runs on the user's machine: one private
// directory per run (0700) holding run.json (0600: guard's Record, with the
// client's private key, and the launcher's own fields), and the downloaded
// outputs. The host key's private half is never here: it lives only in the
// run's Runpod secret.
package state
