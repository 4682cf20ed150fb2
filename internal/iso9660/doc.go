// Package iso9660 writes small read-only ISO 9660 images deterministically:
// the same Volume always gives the same bytes (fixed timestamps, sorted
// entries, no randomness), with Rock Ridge and Joliet names so that Linux,
// cloud-init and Windows see the real, lower-case file names. It is the
// writer behind pkg/cidata; it keeps whole files in memory and is meant for
// seeds of a few kilobytes to megabytes, not for installer media.
package iso9660
