//go:build unix

package podssh

import "syscall"

const syscallNoFollow = syscall.O_NOFOLLOW
