//go:build !unix

package podssh

const syscallNoFollow = 0
