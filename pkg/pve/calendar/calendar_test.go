package calendar

import (
	"strings"
	"testing"
)

// The cases are pve-common test/calendar_event_test.pl's, plus the
// schedules PVE's own docs and GUI offer.
func TestParse(t *testing.T) {
	valid := []string{
		"*", "*/10", "*/12:0", "1/12:0/15", "1,4,6", "0..3", "23..23:0..3", "Mon", "sat..sun",
		"sun..sat", "wed,mon..tue,fri", "mon */15", "22/1:0", "*/2:*", "20..22:*/30", "0,1,3..5",
		"2,4:0,1,3..5", "daily", "hourly", "weekly", "21:00", "sat 02:30", "mon..fri 22:00",
		"mon..fri UTC", "*-*-01 00:00", "2024-12-24 18:00:00", "12-24", "mon,wed,fri 3:15",
		" daily ", "monday 4:00", "*/15 UTC",
	}
	for _, v := range valid {
		ev, err := Parse(v)
		if err != nil {
			t.Errorf("Parse(%q): %v, want it accepted", v, err)
		}
		if got, want := ev.String(), strings.TrimSpace(v); got != want {
			t.Errorf("Parse(%q).String() = %q, want %q", v, got, want)
		}
	}
	invalid := map[string]string{
		"Fri..Mon":   "wrong order in range 'Fri..Mon'",
		"61":         "value '61' out of range",
		"*/61":       "repetition '61' out of range",
		"0..80":      "range end '80' out of range",
		" mon 0 0 0": "unable to parse calendar event - unused parts",
		"":           "unable to parse calendar event - event is empty",
		" mon 0 0":   "unable to parse calendar event - unused parts",
		"25:00":      "value '25' out of range",
		"nightly":    "unable to parse weekday specification 'nightly'",
		"2:x":        "unable to parse minute specification 'x'",
		"*/0":        "repetition '0' out of range",
		"13-01":      "value '13' out of range",
	}
	for in, want := range invalid {
		_, err := Parse(in)
		if err == nil || err.Error() != want {
			t.Errorf("Parse(%q) = %v, want %q", in, err, want)
		}
	}
}

func TestVerifyMessage(t *testing.T) {
	err := Verify("every night")
	if err == nil || !strings.HasPrefix(err.Error(), "invalid calendar event 'every night' - ") {
		t.Fatalf("Verify: got %v, want PVE's 'invalid calendar event' message", err)
	}
}
