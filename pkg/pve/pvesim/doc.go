// Package pvesim is a faithful, stateful Proxmox VE API simulator served over
// HTTP(S): the same paths, parameter checks, response shapes, tasks, locks and
// write-backs as PVE 9.x, for tests, demos and `pvectl sim`. It never touches
// the network beyond the listener it is served on.
package pvesim
