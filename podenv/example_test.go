package podenv_test

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
)

func ExampleSettings_Env() {
	s := podenv.Settings{
		RunID:   "r1",
		Workdir: "/workspace/overbrainer",
		Rules: podenv.Rules{
			Deadline:  time.Unix(1_790_021_600, 0),
			BootGrace: 30 * time.Minute,
		},
		AuthorizedKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJcomaqb8ckRepkDHH1CfKQjIlXD1MGWnmwCZJZcsNG3 overbrainer-r1",
		Claim:         "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFaKCIGTAorZfRm38a9XqitAU3FLqS55pVZdcKm+u+LV",
	}
	env, err := s.Env()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range slices.Sorted(maps.Keys(env)) {
		if name != "OVERBRAINER_VERSION" {
			fmt.Printf("%s=%s\n", name, env[name])
		}
	}
	// Output:
	// JUPYTER_DISABLE=1
	// OVERBRAINER_API_URL=https://api.runpod.io/v2
	// OVERBRAINER_AUTHORIZED_KEY=ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJcomaqb8ckRepkDHH1CfKQjIlXD1MGWnmwCZJZcsNG3 overbrainer-r1
	// OVERBRAINER_BOOT_GRACE=1800
	// OVERBRAINER_CLAIM=ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFaKCIGTAorZfRm38a9XqitAU3FLqS55pVZdcKm+u+LV
	// OVERBRAINER_CONTRACT=3
	// OVERBRAINER_DEADLINE=1790021600
	// OVERBRAINER_HOST_KEY={{ RUNPOD_SECRET_overbrainer_host_key_r1 }}
	// OVERBRAINER_KEEP_POD=0
	// OVERBRAINER_MAX_EXTENSION=3600
	// OVERBRAINER_RETRIEVE_GRACE=3600
	// OVERBRAINER_RUN_DIR=/workspace/overbrainer/r1
	// OVERBRAINER_RUN_ID=r1
	// OVERBRAINER_STALL_AFTER=0
	// OVERBRAINER_WORKDIR=/workspace/overbrainer
}

func ExampleSettings_Validate() {
	s := podenv.Settings{
		RunID:         "my run",
		Workdir:       "/workspace",
		AuthorizedKey: "ssh-dss AAAAB3NzaC1kc3M me@old-laptop",
		Claim:         "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFaKCIGTAorZfRm38a9XqitAU3FLqS55pVZdcKm+u+LV",
	}
	fmt.Println(s.Validate())
	// Output:
	// Settings.RunID: "my run" is not 1 to 64 of [A-Za-z0-9_-]
	// Settings.AuthorizedKey: key type "ssh-dss" is not one of ssh-ed25519, ecdsa-sha2-nistp256, ecdsa-sha2-nistp384, ecdsa-sha2-nistp521, sk-ssh-ed25519@openssh.com, sk-ecdsa-sha2-nistp256@openssh.com, ssh-rsa
}

func ExampleAuthorizedKeyTypes() {
	for _, t := range podenv.AuthorizedKeyTypes() {
		fmt.Println(t)
	}
	fmt.Println("claim:", podenv.HostKeyType)
	// Output:
	// ssh-ed25519
	// ecdsa-sha2-nistp256
	// ecdsa-sha2-nistp384
	// ecdsa-sha2-nistp521
	// sk-ssh-ed25519@openssh.com
	// sk-ecdsa-sha2-nistp256@openssh.com
	// ssh-rsa
	// claim: ssh-ed25519
}

// A run on a network volume states in its host-key secret's description
// how long it may need the secret with no pod; a sweeper reads it back.
func ExampleHostKeySecretNeed() {
	desc := podenv.HostKeySecretDescription("20261204-120000-a1b2", time.Date(2026, 12, 5, 13, 0, 0, 0, time.UTC))
	fmt.Println(desc)
	until, ok, err := podenv.HostKeySecretNeed("20261204-120000-a1b2", desc)
	fmt.Println(until, ok, err)
	_, ok, err = podenv.HostKeySecretNeed("20261204-120000-a1b2", "")
	fmt.Println(ok, err)
	// Output:
	// overbrainer: host key of run 20261204-120000-a1b2, needed until 2026-12-05T13:00:00Z
	// 2026-12-05 13:00:00 +0000 UTC true <nil>
	// false <nil>
}
