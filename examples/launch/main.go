// Command launch runs a training job on a Runpod pod that deletes itself when
// its purpose is over. This first version only prints its usage; the launcher
// itself is being built (see the README).
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	fs := flag.NewFlagSet("launch", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: launch [--local] run|attach|stop|ls|rm ...")
		fs.PrintDefaults()
	}
	fs.Bool("local", false, "use the built-in local Runpod emulator (no account needed)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == flag.ErrHelp {
			return
		}
		os.Exit(2)
	}
	fs.Usage()
	os.Exit(2)
}
