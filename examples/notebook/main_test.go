package main_test

import (
	"testing"

	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// The fake's pod runner re-executes this binary as each pod's init.
func TestMain(m *testing.M) { runpodtest.Main(m) }
