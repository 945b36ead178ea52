// Package costplan is the client's arithmetic of money, time and disk: when
// to ask for a snapshot and when to stop for good under a cost cap, on the
// pod's clock; what a pod has cost so far; and when and how far to grow a
// network volume.
package costplan
