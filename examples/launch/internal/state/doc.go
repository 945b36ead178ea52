// Package state keeps the launcher's runs on the user's machine: one private
// directory per run (0700) holding run.json and the client's private key
// (0600), and the downloaded outputs. The host key's private half is never
// here: it lives only in the run's Runpod secret.
package state
