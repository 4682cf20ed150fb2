// Package schema holds the facts pvectl needs from the PVE API schema —
// parameter names, types, enums, ranges, property-string sub-keys — as a
// compact table generated from the official apidoc (descriptions dropped),
// and checks values and requests against it the way PVE's JSONSchema does.
// PVE's descriptions are AGPL text: Descriptions reads them at run time
// from the user's apidoc, for explain and the editor schema.
package schema
