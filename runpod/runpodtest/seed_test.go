package runpodtest_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// TestAddPods: seeded pods are listed page by page, read and deleted through
// the API like created ones, with the status, times and env they were given.
func TestAddPods(t *testing.T) {
	srv := checkedfake.NewTestServer(t, runpodtest.WithPageSize(2), runpodtest.WithProvisioningDelay(24*time.Hour))
	c := newClient(t, srv)
	ctx := context.Background()
	created := srv.Now().Add(-time.Hour).Truncate(time.Second)
	ids := srv.AddPods(
		runpodtest.SeedPod{Name: "a", Image: "img", Args: "sh -c 'echo hi'", Env: map[string]string{"K": "v"}, CreatedAt: created},
		runpodtest.SeedPod{Name: "b", Status: runpodtest.StatusExited, CreatedAt: created, StartedAt: created.Add(time.Minute)},
		runpodtest.SeedPod{Name: "c", Status: runpodtest.StatusProvisioning, CreatedAt: created.Add(time.Second)},
	)
	if len(ids) != 3 {
		t.Fatalf("ids %q", ids)
	}
	pods, err := c.ListPods(ctx, runpod.ListPodsOptions{})
	if err != nil || len(pods) != 3 {
		t.Fatalf("ListPods: %d pods, %v", len(pods), err)
	}
	want := []struct {
		name   string
		status runpod.PodStatus
	}{{"a", runpod.StatusRunning}, {"b", runpod.StatusExited}, {"c", runpod.PodStatus(runpodtest.StatusProvisioning)}}
	for i, p := range pods {
		if p.ID != ids[i] || p.Name != want[i].name || p.Status != want[i].status || !p.CreatedAt.Equal(pods[0].CreatedAt.Add(time.Duration(i/2)*time.Second)) {
			t.Errorf("pod %d: %s %s %s created %s", i, p.ID, p.Name, p.Status, p.CreatedAt)
		}
	}
	if p := pods[0]; p.Env["K"] != "v" || p.Args != "sh -c 'echo hi'" || p.StartedAt == nil || !p.StartedAt.Equal(created) {
		t.Errorf("pod a: env %v, args %q, started %v", p.Env, p.Args, p.StartedAt)
	}
	if p := pods[1]; p.StartedAt == nil || !p.StartedAt.Equal(created.Add(time.Minute)) {
		t.Errorf("pod b started %v", p.StartedAt)
	}
	if w := srv.Pods()[0].Words; len(w) != 3 || w[2] != "echo hi" {
		t.Errorf("pod a's words %q", w)
	}
	if res, err := c.DeletePods(ctx, ids...); err != nil || len(res) != 3 {
		t.Fatalf("DeletePods: %v %v", res, err)
	}
	if left := srv.Billing(); len(left) != 0 {
		t.Errorf("%d pods left billing", len(left))
	}
}

// A seeded pod's entrypoint and cmd read back as a created pod's do,
// args holding them as Runpod stores them.
func TestAddPodsStartCommand(t *testing.T) {
	srv := checkedfake.NewTestServer(t, runpodtest.AllowPodsLeft())
	c := newClient(t, srv)
	id := srv.AddPods(runpodtest.SeedPod{Name: "ep", Entrypoint: []string{"bash", "-c"}, Cmd: []string{"echo hi"}})[0]
	p, err := c.GetPod(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := p.Command(); !slices.Equal(got, []string{"bash", "-c", "echo hi"}) || p.Args != `{"cmd":["echo hi"],"entrypoint":["bash","-c"]}` {
		t.Errorf("entrypoint %q cmd %q args %q", p.Entrypoint, p.Cmd, p.Args)
	}
}
