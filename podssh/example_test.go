package podssh_test

import (
	"fmt"

	"github.com/overbrainer/overbrainer-go/podssh"
)

// Command runs a script under sh with its arguments quoted, whatever the
// remote user's login shell is.
func ExampleCommand() {
	fmt.Println(podssh.Command(`cat "$1"`, "/workspace/it's here"))
	// Output: sh -c 'cat "$1"' sh '/workspace/it'\''s here'
}
