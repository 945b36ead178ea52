package costplan

import "testing"

func TestMoney(t *testing.T) {
	for usd, want := range map[float64]string{0: "$0", 0.0034: "$0.0034", 0.69: "$0.690", 12.5: "$12.50"} {
		if got := Money(usd); got != want {
			t.Errorf("Money(%v) = %q, want %q", usd, got, want)
		}
	}
}

func TestMoneyUp(t *testing.T) {
	for usd, want := range map[float64]string{0: "$0", 0.00341: "$0.0035", 0.0863: "$0.087", 0.69: "$0.690",
		0.009999: "$0.010", 9.9991: "$10.00", 12.501: "$12.51", 0.1 + 0.2: "$0.300"} {
		if got := MoneyUp(usd); got != want {
			t.Errorf("MoneyUp(%v) = %q, want %q", usd, got, want)
		}
	}
}
