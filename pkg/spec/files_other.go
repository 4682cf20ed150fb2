//go:build !unix

package spec

// openNonBlock: elsewhere opening a named pipe does not wait for a writer.
const openNonBlock = 0
