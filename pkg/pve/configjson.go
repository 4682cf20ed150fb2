package pve

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// decodeConfigJSON reads a PVE config answer — a flat JSON object — in
// one pass, calling add with each member's key and form value (formValue's
// rendering: strings as they are, numbers in decimal, booleans 1/0,
// objects and arrays as compact JSON), in the order they come; a null
// member comes with set false (it unsets the key: of a repeated key, the
// last counts, as in encoding/json). null reports a JSON null instead of
// an object.
//
// A plan reads one config per guest, and decoding it through
// encoding/json (the answer into a map of raw members, then each member
// again) scanned every byte three to four times and allocated each member
// twice; this reads it once and allocates the strings it keeps. It is as
// strict as encoding/json: what that refuses, this refuses
// (TestDecodeConfigJSONMatchesEncodingJSON, FuzzDecodeConfigJSON), and a
// string with escapes or unusual bytes is unquoted by encoding/json
// itself.
func decodeConfigJSON(b []byte, add func(k, v string, set bool)) (null bool, err error) {
	s := &jsonScan{b: b}
	return s.object(func(k string) error {
		v, ok, err := s.value()
		if err != nil {
			return fmt.Errorf("config key %q: %w", k, err)
		}
		add(k, v, ok)
		return nil
	})
}

// jsonScan is a position in a JSON text.
type jsonScan struct {
	b []byte
	i int
}

var errJSONEnd = errors.New("unexpected end of JSON input")

func (s *jsonScan) fail(what string) error {
	if s.i >= len(s.b) {
		return errJSONEnd
	}
	return fmt.Errorf("invalid JSON at offset %d: %s", s.i, what)
}

func (s *jsonScan) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *jsonScan) take(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *jsonScan) literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// atEnd accepts only white space after the value.
func (s *jsonScan) atEnd() error {
	s.space()
	if s.i != len(s.b) {
		return s.fail("data after the top-level value")
	}
	return nil
}

// object reads the whole text as one JSON object (or null, reported as
// null), calling member with each key when the scan stands at its value:
// member must move past the value.
func (s *jsonScan) object(member func(k string) error) (null bool, err error) {
	s.space()
	if s.literal("null") {
		return true, s.atEnd()
	}
	if !s.take('{') {
		return false, s.fail("want a JSON object")
	}
	s.space()
	if s.take('}') {
		return false, s.atEnd()
	}
	for {
		s.space()
		k, err := s.str()
		if err != nil {
			return false, err
		}
		s.space()
		if !s.take(':') {
			return false, s.fail("want ':' after an object key")
		}
		s.space()
		if err := member(k); err != nil {
			return false, err
		}
		s.space()
		if s.take(',') {
			continue
		}
		if s.take('}') {
			return false, s.atEnd()
		}
		return false, s.fail("want ',' or '}' in an object")
	}
}

// array reads the whole text as one JSON array (or null), calling elem
// with each element's raw text.
func (s *jsonScan) array(elem func(raw []byte) error) (null bool, err error) {
	s.space()
	if s.literal("null") {
		return true, s.atEnd()
	}
	if !s.take('[') {
		return false, s.fail("want a JSON array")
	}
	s.space()
	if s.take(']') {
		return false, s.atEnd()
	}
	for {
		s.space()
		start := s.i
		if err := s.skipValue(); err != nil {
			return false, err
		}
		if err := elem(s.b[start:s.i]); err != nil {
			return false, err
		}
		s.space()
		if s.take(',') {
			continue
		}
		if s.take(']') {
			return false, s.atEnd()
		}
		return false, s.fail("want ',' or ']' in an array")
	}
}

// rawValue moves past a value and returns its text (see skipValue).
func (s *jsonScan) rawValue() ([]byte, error) {
	start := s.i
	err := s.skipValue()
	return s.b[start:s.i], err
}

// value reads one member's value as its form value; ok is false for null.
func (s *jsonScan) value() (string, bool, error) {
	if s.i >= len(s.b) {
		return "", false, errJSONEnd
	}
	switch c := s.b[s.i]; {
	case c == '"':
		v, err := s.str()
		return v, err == nil, err
	case c == 'n' && s.literal("null"):
		return "", false, nil
	case c == 't' && s.literal("true"):
		return "1", true, nil
	case c == 'f' && s.literal("false"):
		return "0", true, nil
	case c == '{' || c == '[':
		start := s.i
		if err := s.skipNested(); err != nil {
			return "", false, err
		}
		raw := s.b[start:s.i]
		if !json.Valid(raw) {
			return "", false, fmt.Errorf("invalid JSON at offset %d", start)
		}
		return compactJSON(raw), true, nil
	case c == '-' || c >= '0' && c <= '9':
		start := s.i
		if !s.number() {
			return "", false, s.fail("malformed number")
		}
		return formatNumber(string(s.b[start:s.i]))
	}
	return "", false, s.fail("want a value")
}

// str reads a JSON string. One without escapes, control characters or
// invalid UTF-8 is taken as it is; any other is unquoted by encoding/json,
// which decides what such a string means (and whether it is valid).
func (s *jsonScan) str() (string, error) {
	if !s.take('"') {
		return "", s.fail("want a string")
	}
	start := s.i
	plain := true
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			body := s.b[start:s.i]
			s.i++
			if plain && utf8.Valid(body) {
				return string(body), nil
			}
			var v string
			if err := json.Unmarshal(s.b[start-1:s.i], &v); err != nil {
				return "", err
			}
			return v, nil
		case c == '\\':
			plain = false
			s.i += 2
		case c < 0x20:
			return "", s.fail("control character in a string")
		default:
			s.i++
		}
	}
	return "", errJSONEnd
}

// number reads a number by JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *jsonScan) number() bool {
	s.take('-')
	switch {
	case s.take('0'):
	case s.digit19():
		s.digits()
	default:
		return false
	}
	if s.take('.') {
		if !s.digits() {
			return false
		}
	}
	if s.take('e') || s.take('E') {
		if !s.take('+') {
			s.take('-')
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

func (s *jsonScan) digit19() bool {
	if s.i < len(s.b) && s.b[s.i] >= '1' && s.b[s.i] <= '9' {
		s.i++
		return true
	}
	return false
}

// digits reads one or more digits.
func (s *jsonScan) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// skipNested moves past an object or array (its validity is checked
// apart), strings and all.
func (s *jsonScan) skipNested() error {
	depth := 0
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			if err := s.skipStr(); err != nil {
				return err
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				s.i++
				return nil
			}
		}
		s.i++
	}
	return errJSONEnd
}

// skipStr moves past a string without unquoting it (its validity is
// checked apart).
func (s *jsonScan) skipStr() error {
	if !s.take('"') {
		return s.fail("want a string")
	}
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			s.i++
			return nil
		case '\\':
			s.i += 2
		default:
			s.i++
		}
	}
	return errJSONEnd
}

// skipValue moves past any value, checking only its extent: literals and
// numbers are checked whole, strings, objects and arrays are not.
func (s *jsonScan) skipValue() error {
	if s.i >= len(s.b) {
		return errJSONEnd
	}
	switch c := s.b[s.i]; {
	case c == '"':
		return s.skipStr()
	case c == '{' || c == '[':
		return s.skipNested()
	case s.literal("null") || s.literal("true") || s.literal("false"):
		return nil
	case (c == '-' || c >= '0' && c <= '9') && s.number():
		return nil
	}
	return s.fail("want a value")
}

// envelopeMembers reads the top level of a 2xx answer — PVE's envelope,
// {"data": …} with now and then "changes" or "total" — in one pass and
// returns those members' raw values, not copied. Their insides are left
// to whoever decodes them (each reader of Response.Data and .Changes
// decodes it, which checks it; Do checks a data it does not decode);
// every other member is checked here. Keys match as encoding/json
// matches a struct's fields (ignoring case; the last of a repeated one
// counts); a JSON null is an envelope without members.
func envelopeMembers(raw []byte) (data, changes, total []byte, err error) {
	s := &jsonScan{b: raw}
	_, err = s.object(func(k string) error {
		v, err := s.rawValue()
		switch {
		case err != nil:
			return err
		case strings.EqualFold(k, "data"):
			data = v
		case strings.EqualFold(k, "changes"):
			changes = v
		case !json.Valid(v):
			return fmt.Errorf("invalid JSON in member %q", k)
		case strings.EqualFold(k, "total"):
			total = v
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return data, changes, total, nil
}
