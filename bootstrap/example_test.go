package bootstrap_test

import (
	"fmt"
	"strings"

	"github.com/overbrainer/overbrainer-go/bootstrap"
)

// The pod's command is bash running one script: a few plain functions, the
// watchdog and the rest of the bootstrap packed, and the call that starts it
// all.
func ExampleCommand() {
	cmd := bootstrap.Command()
	script := cmd[2]
	fmt.Println(cmd[0], cmd[1])
	fmt.Println(len(script) <= bootstrap.MaxCommandBytes)
	fmt.Println(strings.Contains(script, "\nWATCHDOG_PACKED="))
	fmt.Print(script[strings.LastIndex(script, "\n\n")+2:])
	// Output:
	// bash -c
	// true
	// true
	// bootstrap_main
}

// A failed bootstrap shows in the watchdog's verdict with its reason.
func ExampleReasons() {
	verdict := "failed bootstrap: host_key_mismatch"
	reason, _ := strings.CutPrefix(verdict, "failed bootstrap: ")
	for _, r := range bootstrap.Reasons() {
		if r == reason {
			fmt.Println("known reason:", r == bootstrap.ReasonHostKeyMismatch)
		}
	}
	// Output:
	// known reason: true
}
