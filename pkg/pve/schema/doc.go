// Package schema holds the facts pvectl needs from the PVE API schema —
// parameter names, types, enums, ranges, property-string sub-keys — as a
// compact table generated from the official apidoc (descriptions dropped),
// and checks values and requests against it the way PVE's JSONSchema does.
package schema
