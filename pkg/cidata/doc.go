// Package cidata builds cloud-init config drives: ISO 9660 images in the
// NoCloud ("cidata") or OpenStack config-drive v2 ("config-2") layout that
// cloud-init reads, byte-identical for the same Seed, and names them by a
// short hash of their bytes so a changed seed gets a new volume name.
package cidata
