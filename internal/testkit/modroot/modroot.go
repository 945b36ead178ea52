package modroot

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Path is this module's path, as its go.mod names it.
const Path = "github.com/overbrainer/overbrainer-go"

// Dir returns the directory of this module's go.mod: the nearest one at
// or above the working directory whose module line names [Path]. Another
// module's go.mod on the way (a test's own, in a temporary directory) is
// passed over.
func Dir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("modroot: %w", err)
	}
	for dir := wd; ; {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && moduleOf(b) == Path {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("modroot: no go.mod of %s at or above %s", Path, wd)
		}
		dir = parent
	}
}

// moduleOf returns the module path a go.mod's module line names.
func moduleOf(gomod []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`)
		}
	}
	return ""
}
