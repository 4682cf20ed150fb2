package spec

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// These checks mirror what the PVE client refuses when it connects, so that
// `validate` reports them at their line instead of the first `plan` failing.

// checkURL returns why raw is not http(s)://host[:port][/api2/json] ("" when
// it is). Plain http is only for loopback hosts: a token sent in clear
// over a network is a leaked token. The message never repeats credentials
// written into the URL.
func checkURL(raw string) string {
	const want = "an http(s) URL like https://pve.example.com:8006"
	if t := strings.TrimSpace(raw); t != "" && !strings.Contains(t, "://") && !strings.ContainsAny(t, "@ ") {
		return fmt.Sprintf("spec.url %q has no scheme: write https://%s", raw, t)
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" {
		if err == nil && u.User != nil {
			return fmt.Sprintf("spec.url must be %s, got %q", want, u.Redacted())
		}
		if err != nil {
			// url.Parse's error quotes the URL, which may hold a password.
			return "spec.url must be " + want
		}
		return fmt.Sprintf("spec.url must be %s, got %q", want, raw)
	}
	switch {
	case u.User != nil:
		return fmt.Sprintf("spec.url %q must not carry credentials: use an API token (spec.tokenId, spec.tokenSecret)", u.Redacted())
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return fmt.Sprintf("spec.url %q must not have a query or fragment", raw)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Sprintf("spec.url %q: port must be 1..65535", raw)
		}
	}
	// A path is allowed: PVE behind a reverse proxy (https://host/pve) is
	// reached at PATH/api2/json, as the client builds it.
	if u.Scheme == "http" && !isLoopbackHost(u.Hostname()) {
		return fmt.Sprintf("spec.url %q: plain http is only allowed for loopback hosts (127.0.0.1, ::1, localhost), the API token would travel unencrypted: use https://%s", raw, u.Host)
	}
	return ""
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkFingerprint returns why s is not a SHA-256 certificate fingerprint
// as the client accepts it: 64 hex digits, colons (or spaces) optional,
// optionally prefixed as openssl prints it ("SHA256 Fingerprint=AA:BB:…").
func checkFingerprint(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndex(s, "="); i >= 0 && strings.HasPrefix(strings.ToLower(s), "sha256") {
		s = s[i+1:]
	}
	s = strings.NewReplacer(":", "", " ", "").Replace(s)
	const want = "a SHA-256 fingerprint (64 hex digits, colons optional, e.g. as `openssl x509 -noout -fingerprint -sha256` prints it)"
	if strings.ContainsFunc(s, func(r rune) bool { return !strings.ContainsRune("0123456789abcdefABCDEF", r) }) {
		return "spec.tlsFingerprint must be " + want + ", got characters that are not hex digits"
	}
	if len(s) != 64 {
		return fmt.Sprintf("spec.tlsFingerprint must be %s, got %d digits", want, len(s))
	}
	return ""
}

// checkCAFile returns why the CA bundle at path cannot be read ("" when it
// can). The path is taken as written, relative to the working directory,
// as the client will open it.
func checkCAFile(path string) string {
	fi, err := os.Stat(path)
	if err == nil && fi.IsDir() {
		return fmt.Sprintf("spec.caFile %q is a directory, want a PEM file", path)
	}
	if err == nil && !fi.Mode().IsRegular() {
		// Never opened: opening a FIFO waits for a writer.
		return fmt.Sprintf("spec.caFile %q is %s, want a PEM file", path, fileType(fi.Mode()))
	}
	if err == nil {
		var f *os.File
		if f, err = os.Open(path); err == nil {
			f.Close()
			return ""
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("spec.caFile %q does not exist", path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("spec.caFile %q is not readable: permission denied", path)
	}
	return fmt.Sprintf("spec.caFile %q: %s", path, describeOSError(err))
}
