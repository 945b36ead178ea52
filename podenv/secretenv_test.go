package podenv_test

import "testing"

// SecretEnv reaches the pod as one comma-separated list, which the
// bootstrap reads to drop those names from the job's environment.
func TestSecretEnvReachesTheEnv(t *testing.T) {
	s := seedSettings()
	if _, ok := mustEnv(t, s)["OVERBRAINER_SECRET_ENV"]; ok {
		t.Error("OVERBRAINER_SECRET_ENV set without SecretEnv")
	}
	s.SecretEnv = []string{"WANDB_DSN", "my_conn"}
	if got := mustEnv(t, s)["OVERBRAINER_SECRET_ENV"]; got != "WANDB_DSN,my_conn" {
		t.Errorf("OVERBRAINER_SECRET_ENV = %q", got)
	}
}
