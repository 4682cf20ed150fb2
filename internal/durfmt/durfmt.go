// Package durfmt writes every duration pvectl shows a person in one style
// (docs/decisions.md, "Durations in one style"): Terraform's and kubectl's
// compact Go units, as precise as the size calls for:
//
//	below 1 s       whole milliseconds   445ms
//	1 s to 10 s     one decimal          1.3s, 2s
//	10 s and above  whole seconds        45s, 1m30s, 3m0s, 1h2m3s
//
// A zero or negative duration, or one that rounds to nothing, is "0s".
// Every result is also valid flag syntax (time.ParseDuration reads it
// back), so a shown limit can be copied into --busy-timeout and the like.
// Machine output (JSON's elapsed_seconds) keeps its plain numbers.
package durfmt

import "time"

// Format writes d in pvectl's one duration style.
func Format(d time.Duration) string {
	return Round(d).String()
}

// Round is d rounded as Format shows it (half away from zero), and never
// negative.
func Round(d time.Duration) time.Duration {
	switch {
	case d <= 0:
		return 0
	case d < time.Second:
		return d.Round(time.Millisecond)
	case d < 10*time.Second:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}
