package shtest

import (
	"bufio"
	"os"
	"regexp"
)

// The process creations strace -f reports (a whole call, or one resumed
// after strace printed it unfinished), and the exec of sleep, which ends
// each turn of a loop that sleeps between turns (the watchdog's tick).
var (
	straceCloneRE = regexp.MustCompile(`^\d+ +(<\.\.\. )?(clone3?|v?fork)(\(| resumed>).* = [1-9][0-9]*$`)
	straceSleepRE = regexp.MustCompile(`^\d+ +execve\("[^"]*/sleep"`)
)

// CountTicks reads the log of `strace -f -o path` of a sleeping loop: the
// process creations after the first sleep up to the last one (whole turns
// only), and the number of sleeps. Creations per turn are
// clones/(sleeps-1). A log that cannot be read counts nothing.
func CountTicks(path string) (clones, sleeps int) {
	n := 0
	eachLine(path, func(l string) {
		switch {
		case straceSleepRE.MatchString(l):
			sleeps++
			clones = n
		case straceCloneRE.MatchString(l) && sleeps > 0:
			n++
		}
	})
	return clones, sleeps
}

// CountClones reads the log of `strace -f -o path` and counts the process
// creations in it. A log that cannot be read counts nothing.
func CountClones(path string) int {
	n := 0
	eachLine(path, func(l string) {
		if straceCloneRE.MatchString(l) {
			n++
		}
	})
	return n
}

// eachLine calls fn with each line of the file at path; none when it cannot
// be read.
func eachLine(path string, fn func(string)) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fn(sc.Text())
	}
}
