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
		RunID:         "r1",
		Workdir:       "/workspace/overbrainer",
		Deadline:      time.Unix(1_790_021_600, 0),
		BootGrace:     30 * time.Minute,
		AuthorizedKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIClient overbrainer-r1",
		Claim:         "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHost",
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
	// OVERBRAINER_AUTHORIZED_KEY=ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIClient overbrainer-r1
	// OVERBRAINER_BOOT_GRACE=1800
	// OVERBRAINER_CLAIM=ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHost
	// OVERBRAINER_DEADLINE=1790021600
	// OVERBRAINER_HOST_KEY={{ RUNPOD_SECRET_overbrainer_host_key_r1 }}
	// OVERBRAINER_KEEP_POD=0
	// OVERBRAINER_RETRIEVE_GRACE=3600
	// OVERBRAINER_RUN_DIR=/workspace/overbrainer/r1
	// OVERBRAINER_RUN_ID=r1
	// OVERBRAINER_WORKDIR=/workspace/overbrainer
}

func ExampleSettings_Validate() {
	s := podenv.Settings{RunID: "my run", Workdir: "/workspace", AuthorizedKey: "ssh-ed25519 AAAA", Claim: "ssh-ed25519 AAAB"}
	fmt.Println(s.Validate())
	// Output:
	// podenv: Settings.RunID: "my run" is not 1 to 64 of [A-Za-z0-9_-]
}
