package localpod

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path"
	"strings"

	"github.com/overbrainer/overbrainer-go/podenv"
)

// CheckFallbacks refuses a pod whose last-resort deletes could leave
// this machine with the pod's key: an API URL (OVERBRAINER_API_URL) that
// is not on a loopback address, which the watchdog's curl and runpodctl
// call, or a runpodctl on the pod's PATH (the host's, which the pod's root
// overlays, or one of the image's files), which a fallback that is not
// pointed at the pod's API runs against Runpod's own hosts.
func CheckFallbacks(env map[string]string, files map[string]string) error {
	api := env[podenv.APIURLEnv]
	u, err := url.Parse(api)
	if err != nil || !loopbackHost(u.Hostname()) {
		return fmt.Errorf("localpod: the pod's %s %q is not on a loopback address: its watchdog's deletes would leave this machine", podenv.APIURLEnv, api)
	}
	for _, dir := range strings.Split(env["PATH"], ":") {
		if !path.IsAbs(dir) {
			continue
		}
		f := path.Join(dir, "runpodctl")
		_, inImage := files[f]
		if st, err := os.Stat(f); inImage || err == nil && !st.IsDir() {
			return fmt.Errorf("localpod: %s is on the pod's PATH: a delete fallback would run it against Runpod's own hosts with the pod's key; remove it from the host (or the image) to run pods here", f)
		}
	}
	return nil
}

func loopbackHost(h string) bool {
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback() || h == "localhost"
}
