// Package termtext makes text that a pod controls safe to print on a
// terminal: Escape writes its control characters as escapes, so that a
// job cannot move the cursor, retitle the window or hide a line of the
// launcher's; ReadLine reads a line of such text with a bound, so that a
// pod that never sends a newline cannot fill the client's memory.
package termtext
