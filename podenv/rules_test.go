package podenv

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

// Every knob of Rules (each duration or count) has its default in
// EffectiveRules and its line in knobs, so a knob added to the type cannot
// miss its default, its checks, its place in the env or its reading.
func TestEveryKnobHasADefaultAndAVariable(t *testing.T) {
	var table []string
	for _, k := range (&Rules{}).knobs() {
		table = append(table, k.field)
	}
	effective := reflect.ValueOf(Rules{}.EffectiveRules())
	typ := effective.Type()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Type != reflect.TypeFor[time.Duration]() && f.Type != reflect.TypeFor[int]() {
			continue
		}
		if effective.Field(i).IsZero() && !slices.Contains(offWhenZero, f.Name) {
			t.Errorf("EffectiveRules leaves %s zero: it has no default", f.Name)
		}
		if !slices.Contains(table, f.Name) {
			t.Errorf("%s is not among the knobs: Env would not pass it, nor Parse read it", f.Name)
		}
	}
}

// offWhenZero are the knobs whose zero turns their rule off rather than
// taking a default.
var offWhenZero = []string{"StallAfter", "MinGPUUtil"}

func TestEffectiveRules(t *testing.T) {
	got := Rules{Keep: true, Interval: 5 * time.Second, ProbeTries: 2}.EffectiveRules()
	want := Rules{
		Keep: true, Interval: 5 * time.Second, ProbeTries: 2,
		BootGrace: DefaultBootGrace, RetrieveGrace: DefaultRetrieveGrace, LeaseTTL: DefaultLeaseTTL,
		SnapshotLead: DefaultSnapshotLead, SnapshotWait: DefaultSnapshotWait, ProbeWait: DefaultProbeWait,
		MaxExtension: DefaultMaxExtension, KeepIdle: DefaultKeepIdle,
	}
	if got != want {
		t.Errorf("EffectiveRules = %+v, want %+v", got, want)
	}
	if ext := (Rules{HardDeadline: true}).EffectiveRules().MaxExtension; ext != 0 {
		t.Errorf("a hard deadline's extension = %s, want 0", ext)
	}
	if idle := (Rules{Keep: true, KeepUnbounded: true}).EffectiveRules().KeepIdle; idle != 0 {
		t.Errorf("an unbounded kept pod's idle bound = %s, want 0", idle)
	}
}
