// Package pve is pvectl's client for the Proxmox VE REST API (/api2/json):
// API-token auth, verified or pinned TLS, one request path with redacted
// tracing, typed errors, lock-timeout retries and waiting on UPID tasks.
package pve
