// Package calendar parses PVE calendar events (the `pve-calendar-event`
// format of backup and replication schedules) offline, as PVE parses them,
// so a schedule PVE would refuse is found before any API call.
//
// PVE's format check is pve-common src/PVE/CalendarEvent.pm
// pve_verify_calendar_event: the event is trimmed, an empty one is refused
// ("unable to parse calendar event - event is empty"), the rest goes to
// proxmox-time's systemd-like parser (Proxmox::RS::CalendarEvent). The
// accepted forms and error texts below follow pve-common
// test/calendar_event_test.pl and the proxmox-time grammar:
//
//	[WEEKDAYS] [[YEAR-]MONTH-DAY] [HOUR:]MINUTE[:SECOND] [UTC]
//
// or one of the keywords minutely, hourly, daily, weekly, monthly,
// yearly, annually, quarterly, semiannually, semi-annually. Each number
// field is a comma list of N, A..B, N/R, A..B/R, * or */R; a lone time
// field is the minute ('*/10': every ten minutes).
package calendar

import (
	"fmt"
	"strconv"
	"strings"
)

// Event is a parsed calendar event; only whether it parses is exposed.
type Event struct {
	text string
}

// String is the event as written (trimmed).
func (e Event) String() string { return e.text }

// keywords are proxmox-time's shorthands, written in lower case.
var keywords = map[string]bool{
	"minutely": true, "hourly": true, "daily": true, "weekly": true, "monthly": true,
	"yearly": true, "annually": true, "quarterly": true, "semiannually": true, "semi-annually": true,
}

// weekdays are the day names proxmox-time takes, in either length, in
// any letter case; the value is the day's number as pve-common's
// $dow_names has it (Sunday 0), which a range must keep ("wrong order in
// range 'Fri..Mon'") — except that Sunday ends a range as day 7, so both
// sat..sun and sun..sat are accepted (test/calendar_event_test.pl).
var weekdays = map[string]int{
	"sun": 0, "sunday": 0, "mon": 1, "monday": 1, "tue": 2, "tuesday": 2, "wed": 3, "wednesday": 3,
	"thu": 4, "thursday": 4, "fri": 5, "friday": 5, "sat": 6, "saturday": 6,
}

// Verify reports whether text is an event PVE accepts, with the message
// PVE's format check gives when it is not.
func Verify(text string) error {
	if _, err := Parse(text); err != nil {
		return fmt.Errorf("invalid calendar event '%s' - %w", text, err)
	}
	return nil
}

// Parse parses an event as proxmox-time does.
func Parse(text string) (Event, error) {
	t := strings.TrimSpace(text)
	if t == "" {
		return Event{}, fmt.Errorf("unable to parse calendar event - event is empty")
	}
	if keywords[t] {
		return Event{text: t}, nil
	}
	parts := strings.Fields(t)
	if len(parts) > 0 && parts[len(parts)-1] == "UTC" {
		parts = parts[:len(parts)-1]
	}
	var err error
	if len(parts) > 0 && isWeekdayList(parts[0]) {
		if err = parseWeekdays(parts[0]); err != nil {
			return Event{}, err
		}
		parts = parts[1:]
	}
	if len(parts) > 0 && strings.Contains(parts[0], "-") && !strings.Contains(parts[0], ":") {
		if err = parseDate(parts[0]); err != nil {
			return Event{}, err
		}
		parts = parts[1:]
	}
	if len(parts) > 0 {
		if err = parseTime(parts[0]); err != nil {
			return Event{}, err
		}
		parts = parts[1:]
	}
	if len(parts) > 0 {
		return Event{}, fmt.Errorf("unable to parse calendar event - unused parts")
	}
	return Event{text: t}, nil
}

// isWeekdayList: the first part is a day list when it starts with a letter.
func isWeekdayList(s string) bool {
	c := s[0]
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func parseWeekdays(s string) error {
	for _, item := range strings.Split(s, ",") {
		from, to, isRange := strings.Cut(item, "..")
		a, ok := weekdays[strings.ToLower(from)]
		if !ok {
			return fmt.Errorf("unable to parse weekday specification '%s'", item)
		}
		if !isRange {
			continue
		}
		b, ok := weekdays[strings.ToLower(to)]
		if !ok {
			return fmt.Errorf("unable to parse weekday specification '%s'", item)
		}
		if b == 0 {
			b = 7
		}
		if b < a {
			return fmt.Errorf("wrong order in range '%s'", item)
		}
	}
	return nil
}

// field is one number field's limits.
type field struct {
	name     string
	min, max int
}

var (
	yearField   = field{"year", 1970, 9999}
	monthField  = field{"month", 1, 12}
	dayField    = field{"day", 1, 31}
	hourField   = field{"hour", 0, 23}
	minuteField = field{"minute", 0, 59}
	secondField = field{"second", 0, 59}
)

// parseDate is [YEAR-]MONTH-DAY.
func parseDate(s string) error {
	comps := strings.Split(s, "-")
	fields := []field{monthField, dayField}
	switch len(comps) {
	case 2:
	case 3:
		fields = []field{yearField, monthField, dayField}
	default:
		return fmt.Errorf("unable to parse date specification '%s'", s)
	}
	for i, c := range comps {
		if err := parseField(c, fields[i]); err != nil {
			return err
		}
	}
	return nil
}

// parseTime is [HOUR:]MINUTE[:SECOND]; a lone field is the minute.
func parseTime(s string) error {
	comps := strings.Split(s, ":")
	var fields []field
	switch len(comps) {
	case 1:
		fields = []field{minuteField}
	case 2:
		fields = []field{hourField, minuteField}
	case 3:
		fields = []field{hourField, minuteField, secondField}
	default:
		return fmt.Errorf("unable to parse time specification '%s'", s)
	}
	for i, c := range comps {
		if err := parseField(c, fields[i]); err != nil {
			return err
		}
	}
	return nil
}

// parseField is a comma list of N, A..B, N/R, A..B/R, * and */R.
func parseField(s string, f field) error {
	if s == "" {
		return fmt.Errorf("unable to parse %s specification - empty value", f.name)
	}
	for _, item := range strings.Split(s, ",") {
		if err := parseItem(item, f); err != nil {
			return err
		}
	}
	return nil
}

func parseItem(item string, f field) error {
	base, rep, repeated := strings.Cut(item, "/")
	if repeated {
		r, err := number(rep, f.name)
		if err != nil {
			return err
		}
		if r < 1 || r > f.max {
			return fmt.Errorf("repetition '%d' out of range", r)
		}
	}
	if base == "*" {
		return nil
	}
	from, to, isRange := strings.Cut(base, "..")
	a, err := number(from, f.name)
	if err != nil {
		return err
	}
	if a < f.min || a > f.max {
		return fmt.Errorf("value '%d' out of range", a)
	}
	if !isRange {
		return nil
	}
	b, err := number(to, f.name)
	if err != nil {
		return err
	}
	if b < f.min || b > f.max {
		return fmt.Errorf("range end '%d' out of range", b)
	}
	if b < a {
		return fmt.Errorf("range start is bigger than end in '%s'", base)
	}
	return nil
}

func number(s, name string) (int, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("unable to parse %s specification '%s'", name, s)
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("unable to parse %s specification '%s'", name, s)
	}
	return n, nil
}
