package bootstrap_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
)

// Names that usually hold a password or a connection string, and the names
// the run lists in OVERBRAINER_SECRET_ENV, stay out of the job env, written
// under every shell; names that only look alike stay in.
func TestJobEnvDropsSecretLikeNames(t *testing.T) {
	keep := map[string]string{
		"PATH":              "/usr/bin:/bin",
		"COMPASS":           "north",
		"PASSAGE":           "kept",
		"PWD_HINT":          "kept",
		"DATABASE_URL_HINT": "kept",
	}
	drop := map[string]string{
		"DB_PASS":                  "pass_7c1e",
		"SMTP_PASSWORD":            "password_7c1e",
		"MYSQL_PWD":                "pwd_7c1e",
		"GCP_CREDENTIALS":          "credentials_7c1e",
		"DEPLOY_PRIVATE_KEY":       "private_7c1e",
		"DATABASE_URL":             "postgres://u:url_7c1e@db/x",
		"WANDB_DSN":                "listed_7c1e",
		"MY_CONN":                  "listed2_7c1e",
		"GOOGLE_APPLICATION_CREDS": "kept_but_not_secret_by_name",
	}
	// Not secret by name, and not listed: it stays.
	keep["GOOGLE_APPLICATION_CREDS"] = drop["GOOGLE_APPLICATION_CREDS"]
	delete(drop, "GOOGLE_APPLICATION_CREDS")
	// The list itself goes too: its name says SECRET.
	env := map[string]string{"OVERBRAINER_SECRET_ENV": "WANDB_DSN,MY_CONN"}
	for k, v := range keep {
		env[k] = v
	}
	for k, v := range drop {
		env[k] = v
	}
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		out := jobEnv(t, sh.Name, env)
		for name, secret := range drop {
			if bytes.Contains(out, []byte(secret)) {
				t.Errorf("the job env holds %s", name)
			}
		}
		file := filepath.Join(t.TempDir(), "job.env")
		if err := os.WriteFile(file, out, 0o600); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(keep, sourced(t, "dash", file)); diff != "" {
			t.Errorf("job env (-want +got):\n%s", diff)
		}
	})
}
