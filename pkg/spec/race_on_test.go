//go:build race

package spec

// raceEnabled: the race detector multiplies what every allocation costs,
// so absolute memory bounds are checked without it only.
const raceEnabled = true
