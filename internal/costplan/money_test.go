package costplan

import "testing"

func TestMoney(t *testing.T) {
	for usd, want := range map[float64]string{0: "$0", 0.0034: "$0.0034", 0.69: "$0.690", 12.5: "$12.50"} {
		if got := Money(usd); got != want {
			t.Errorf("Money(%v) = %q, want %q", usd, got, want)
		}
	}
}
