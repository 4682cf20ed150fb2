package pve

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// tlsConfig builds the client TLS settings: system roots by default, plus a
// CA bundle; a pinned fingerprint replaces chain verification altogether.
func tlsConfig(cfg *config) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.caFile != "" {
		pem, err := os.ReadFile(cfg.caFile)
		if err != nil {
			return nil, fmt.Errorf("CA file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s: no PEM certificate found", cfg.caFile)
		}
		tc.RootCAs = pool
	}
	switch {
	case cfg.fingerprint != "":
		want := cfg.fingerprint
		// Chain and hostname checks are skipped on purpose: a pin names the
		// exact certificate, which is how self-signed PVE nodes are trusted.
		tc.InsecureSkipVerify = true
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return &CertError{Host: cs.ServerName, Pinned: formatFingerprint(want), Reason: "the server presented no certificate"}
			}
			got := certFingerprint(cs.PeerCertificates[0])
			if got != want {
				return &CertError{
					Host:        cs.ServerName,
					Fingerprint: formatFingerprint(got),
					Pinned:      formatFingerprint(want),
					Reason:      "certificate does not match the pinned fingerprint",
				}
			}
			return nil
		}
	case cfg.insecure:
		tc.InsecureSkipVerify = true
	}
	return tc, nil
}

// CertError is a TLS verification failure, carrying the presented leaf
// certificate's fingerprint so that the user can decide to pin it.
type CertError struct {
	Host        string
	Fingerprint string // presented leaf, colon-separated upper-case hex
	Pinned      string // the configured pin, when the failure is a mismatch
	Reason      string
	Err         error
}

func (e *CertError) Error() string {
	var b strings.Builder
	b.WriteString("TLS certificate")
	if e.Host != "" {
		fmt.Fprintf(&b, " of %s", e.Host)
	}
	if e.Pinned != "" {
		fmt.Fprintf(&b, " rejected: %s %s", e.Reason, e.Pinned)
		if e.Fingerprint != "" {
			fmt.Fprintf(&b, "; the server presented SHA-256 %s; if it was legitimately replaced, set PROXMOX_TLS_FINGERPRINT=%s", e.Fingerprint, e.Fingerprint)
		}
		return b.String()
	}
	fmt.Fprintf(&b, " is not trusted: %s", e.Reason)
	if e.Fingerprint != "" {
		fmt.Fprintf(&b, "; presented certificate SHA-256 fingerprint %s; to trust it, set PROXMOX_TLS_FINGERPRINT=%s (or PROXMOX_CA_FILE, or PROXMOX_INSECURE=1)", e.Fingerprint, e.Fingerprint)
	}
	return b.String()
}

func (e *CertError) Unwrap() error { return e.Err }

// certError turns the standard library's verification failure into a
// *CertError naming the fingerprint; other errors pass through.
func certError(err error, host string) error {
	var ce *CertError
	if errors.As(err, &ce) {
		if ce.Host == "" {
			ce.Host = host
		}
		return ce
	}
	var ve *tls.CertificateVerificationError
	if !errors.As(err, &ve) {
		return err
	}
	out := &CertError{Host: host, Reason: ve.Err.Error(), Err: err}
	var ua x509.UnknownAuthorityError
	if errors.As(ve.Err, &ua) {
		out.Reason = "it is signed by an unknown authority (self-signed PVE certificate?)"
	}
	if len(ve.UnverifiedCertificates) > 0 {
		out.Fingerprint = formatFingerprint(certFingerprint(ve.UnverifiedCertificates[0]))
	}
	return out
}

func certFingerprint(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	return hex.EncodeToString(sum[:])
}

// normalizeFingerprint accepts "AA:BB:…", "aabb…" and openssl's
// "SHA256 Fingerprint=AA:BB:…" and returns 64 lower-case hex digits.
func normalizeFingerprint(s string) (string, error) {
	s = strings.TrimSpace(s)
	if i := strings.LastIndex(s, "="); i >= 0 && strings.HasPrefix(strings.ToLower(s), "sha256") {
		s = s[i+1:]
	}
	s = strings.ToLower(strings.NewReplacer(":", "", " ", "").Replace(s))
	if len(s) != sha256.Size*2 {
		return "", fmt.Errorf("invalid TLS fingerprint: want a SHA-256 (64 hex digits, colons optional), got %d digits", len(s))
	}
	if _, err := hex.DecodeString(s); err != nil {
		return "", errors.New("invalid TLS fingerprint: not hexadecimal")
	}
	return s, nil
}

// formatFingerprint renders 64 hex digits the way PVE's GUI and openssl do.
func formatFingerprint(hexfp string) string {
	up := strings.ToUpper(hexfp)
	parts := make([]string, 0, len(up)/2)
	for i := 0; i+1 < len(up); i += 2 {
		parts = append(parts, up[i:i+2])
	}
	return strings.Join(parts, ":")
}
