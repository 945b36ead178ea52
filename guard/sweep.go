package guard

import (
	"context"
	"time"

	"github.com/overbrainer/overbrainer-go/sweep"
)

// The sweeper moved to package sweep, which a scheduled sweeper can import
// without the rest of guard. These names forward to it for one release.

// Deprecated: use sweep.API.
type SweepAPI = sweep.API

// Deprecated: use sweep.Policy.
type SweepPolicy = sweep.Policy

// Deprecated: use sweep.Rule.
type SweepRule = sweep.Rule

// Deprecated: use sweep.Decision.
type Decision = sweep.Decision

// Deprecated: use sweep.Report.
type Report = sweep.Report

// Deprecated: use package sweep's constants; DefaultSweepMargin is
// sweep.DefaultMargin, MinSweepPeriod sweep.MinPeriod.
const (
	DefaultExitedGrace = sweep.DefaultExitedGrace
	DefaultSweepMargin = sweep.DefaultMargin
	DefaultSecretGrace = sweep.DefaultSecretGrace
	MinSweepPeriod     = sweep.MinPeriod

	RuleKeep         = sweep.RuleKeep
	RuleExited       = sweep.RuleExited
	RuleNeverRan     = sweep.RuleNeverRan
	RuleDeadline     = sweep.RuleDeadline
	RuleCostCap      = sweep.RuleCostCap
	RuleUnmarked     = sweep.RuleUnmarked
	RuleSecretOrphan = sweep.RuleSecretOrphan
	RuleCannotJudge  = sweep.RuleCannotJudge
)

// Deprecated: use sweep.Once.
func Sweep(ctx context.Context, c SweepAPI, p SweepPolicy) (Report, error) {
	return sweep.Once(ctx, c, p)
}

// Deprecated: use sweep.Every.
func SweepEvery(ctx context.Context, c SweepAPI, p SweepPolicy, every time.Duration, each func(Report, error)) error {
	return sweep.Every(ctx, c, p, every, each)
}

// Deprecated: use sweep.CheckPeriod.
func CheckSweepPeriod(every time.Duration, baseURL string) error {
	return sweep.CheckPeriod(every, baseURL)
}
