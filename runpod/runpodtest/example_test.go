package runpodtest_test

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// A test points its Runpod client at the fake, then reads what happened. In
// a test, runpodtest.NewTestServer(t) replaces NewServer and Close, and
// fails the test if a pod is left billing.
func Example() {
	srv := runpodtest.NewServer()
	defer srv.Close()
	// Hand srv.BaseURL() and srv.APIKey() to the code under test; here, a
	// bare HTTP call stands for it.
	body := `{"name":"demo","image":"runpod/base","gpu":{"id":"NVIDIA RTX A5000"},"args":"'sleep' 'infinity'"}`
	req, _ := http.NewRequest("POST", srv.BaseURL()+"/pods", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+srv.APIKey())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()

	for _, p := range srv.Pods() {
		fmt.Println(resp.StatusCode, p.Name, p.Status, p.CostPerHr, p.Words)
	}
	fmt.Println(len(srv.Billing()), "pod billing")
	// Output:
	// 201 demo RUNNING 0.27 [sleep infinity]
	// 1 pod billing
}

// Faults make the next calls fail the way Runpod can: here, a rate limit.
func ExampleServer_Fail() {
	srv := runpodtest.NewServer()
	defer srv.Close()
	srv.Fail("GET", "/v2/pods", runpodtest.Fault{Times: 1, Status: 429, RetryAfter: "2"})

	for range 2 {
		req, _ := http.NewRequest("GET", srv.BaseURL()+"/pods", nil)
		req.Header.Set("Authorization", "Bearer "+srv.APIKey())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// Output:
	// 429 2
	// 200
}
