package runpod_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
)

func ExampleNew() {
	c, err := runpod.New("rpa_example_key",
		runpod.WithRetry(3, 10*time.Second), // 3 tries in all, never more than 10 s apart
		runpod.WithUserAgent("my-launcher/1.0"),
	)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.BaseURL())

	_, err = runpod.New("rpa_example_key", runpod.WithRetry(0, time.Second))
	fmt.Println(errors.Is(err, runpod.ErrInvalid))
	// Output:
	// https://api.runpod.io/v2
	// true
}

func ExampleClient_CreatePod() {
	// A stand-in for Runpod that answers the create.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"7h9k2m4n6p","name":"overbrainer-run42","status":"PROVISIONING","cost":0.44,
			"args":"{\"entrypoint\":[\"bash\",\"-c\"],\"cmd\":[\"echo started\"]}",
			"entrypoint":["bash","-c"],"cmd":["echo started"],"createdAt":"2026-06-01T12:00:00Z"}`)
	}))
	defer srv.Close()

	c, err := runpod.New("rpa_example_key", runpod.WithBaseURL(srv.URL+"/v2"))
	if err != nil {
		log.Fatal(err)
	}
	pod, err := c.CreatePod(context.Background(), runpod.CreatePodRequest{
		Name:          "overbrainer-run42", // unique: CreatePod finds the pod by it after a lost answer
		Image:         "runpod/pytorch:1.0.2-cu1281-torch280-ubuntu2404",
		GPUTypeID:     "NVIDIA GeForce RTX 4090",
		Cloud:         runpod.SecureCloud,
		NetworkVolume: &runpod.NetworkMount{VolumeID: "agv6w2qcg7", Path: "/workspace"},
		Ports:         []string{"22/tcp"},
		Env:           map[string]string{podenv.HostKeyEnv: "{{ RUNPOD_SECRET_overbrainer_host_key_run42 }}"},
		// The image's ENTRYPOINT, whatever it does, never runs.
		Entrypoint: []string{"bash", "-c"},
		Cmd:        []string{"echo started"},
	})
	if err != nil {
		log.Fatal(err)
	}
	cmd, _ := pod.Command()
	fmt.Println(pod.ID, pod.Status, pod.CostPerHr)
	fmt.Printf("%q\n", cmd)
	// Output:
	// 7h9k2m4n6p PROVISIONING 0.44
	// ["bash" "-c" "echo started"]
}

func ExampleClient_DeletePod() {
	// A Runpod whose DELETE is broken but whose terminate action works:
	// the GET that confirms it finds the pod TERMINATED.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method + " " + r.URL.Path {
		case "DELETE /v2/pods/p1":
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"title":"Internal Server Error","status":500,"detail":"upstream failure"}`)
		case "POST /v2/pods/p1/action": // {"action":"terminate"}
			w.WriteHeader(http.StatusNoContent)
		case "GET /v2/pods/p1":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"p1","name":"n","status":"TERMINATED","createdAt":"2026-06-01T12:00:00Z"}`)
		}
	}))
	defer srv.Close()

	c, _ := runpod.New("rpa_example_key", runpod.WithBaseURL(srv.URL+"/v2"))
	res, err := c.DeletePod(context.Background(), "p1")
	fmt.Println(res, res.StillBilling(), err)
	// Output:
	// terminated false <nil>
}

func ExampleClient_DeletePod_stopped() {
	// Only stop works (GET then shows the pod EXITED): the pod's volume
	// still bills, and DeletePod says so.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if string(body) == `{"action":"stop"}` || r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"p1","name":"n","status":"EXITED","createdAt":"2026-06-01T12:00:00Z"}`)
			return
		}
		w.WriteHeader(http.StatusConflict)
	}))
	defer srv.Close()

	c, _ := runpod.New("rpa_example_key", runpod.WithBaseURL(srv.URL+"/v2"))
	res, err := c.DeletePod(context.Background(), "p1")
	fmt.Println(res)
	fmt.Println(res.StillBilling(), errors.Is(err, runpod.ErrStillBilling))
	// Output:
	// stopped (volume still billing)
	// true true
}

func ExampleAPIError() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("X-Request-Id", "req-123")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"title":"Not Found","status":404,"detail":"pod not found"}`)
	}))
	defer srv.Close()

	c, _ := runpod.New("rpa_example_key", runpod.WithBaseURL(srv.URL+"/v2"))
	_, err := c.GetPod(context.Background(), "nope")
	fmt.Println(errors.Is(err, runpod.ErrNotFound))
	var ae *runpod.APIError
	if errors.As(err, &ae) {
		fmt.Println(ae.StatusCode, ae.Detail, ae.RequestID)
	}
	fmt.Println(err)
	// Output:
	// true
	// 404 pod not found req-123
	// runpod: GET /pods/nope: 404 Not Found: pod not found (request id req-123)
}

func ExampleQuoteArgs() {
	args := runpod.QuoteArgs([]string{"bash", "-c", `echo "it's $HOME"`})
	fmt.Println(args)
	words, _ := runpod.SplitArgs(args)
	fmt.Printf("%q\n", words)
	// Output:
	// 'bash' '-c' 'echo "it'\''s $HOME"'
	// ["bash" "-c" "echo \"it's $HOME\""]
}

func ExampleSplitArgs() {
	words, err := runpod.SplitArgs(`python train.py --name "run 42" --note 'no $expansion' a\ b`)
	fmt.Printf("%q %v\n", words, err)
	// Output:
	// ["python" "train.py" "--name" "run 42" "--note" "no $expansion" "a b"] <nil>
}

func ExampleGPUType_PricePerHour() {
	g := runpod.GPUType{ID: "NVIDIA GeForce RTX 4090", Secure: true, Community: true, SecurePrice: 0.44, CommunityPrice: 0.31}
	p, ok := g.PricePerHour(runpod.CommunityCloud, 2)
	fmt.Printf("$%.2f/h %v\n", p, ok)
	// Output:
	// $0.62/h true
}

func ExamplePod_PublicPort() {
	pod := runpod.Pod{Runtime: &runpod.PodRuntime{Ports: []runpod.PortMapping{
		{Private: 22, Public: 34446, Type: "tcp", IP: "195.26.233.3"},
	}}}
	ip, port, ok := pod.PublicPort(22)
	fmt.Println(ip, port, ok)
	// Output:
	// 195.26.233.3 34446 true
}
