// Package simtest starts the PVE simulator for tests: pvesim on a loopback
// httptest server with test defaults, optionally over TLS and behind the
// official-schema conformance checker, with a ready pve.Client and a
// request counter. Every test that needs a simulator starts it here.
package simtest
