package pve

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// otherCA writes a PEM certificate unrelated to the test server's.
func otherCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(7),
		Subject:               pkix.Name{CommonName: "other CA"},
		NotBefore:             time.Unix(0, 0),
		NotAfter:              time.Date(2199, 1, 1, 0, 0, 0, 0, time.UTC),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return writePEM(t, der)
}

func writePEM(t *testing.T, der []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTLS(t *testing.T) {
	f := newFakePVE(t, true)
	f.handle("GET /version", data(map[string]any{"version": "9.1.1"}))
	leaf := f.srv.Certificate()
	sum := sha256.Sum256(leaf.Raw)
	fpHex := hex.EncodeToString(sum[:])
	fpColons := formatFingerprint(fpHex) // AA:BB:…
	wrong := strings.Repeat("ab", 32)
	serverCA := writePEM(t, leaf.Raw)
	unrelatedCA := otherCA(t)
	hint := "set PROXMOX_TLS_FINGERPRINT=" + fpColons + " (or PROXMOX_CA_FILE, or PROXMOX_INSECURE=1)"

	tests := []struct {
		name    string
		opts    []Option
		wantErr []string // substrings; nil means success
	}{
		{name: "unknown certificate", wantErr: []string{"not trusted", "unknown authority", fpColons, hint}},
		{name: "pin with colons lower-case", opts: []Option{WithFingerprint(strings.ToLower(fpColons))}},
		{name: "pin bare upper-case hex", opts: []Option{WithFingerprint(strings.ToUpper(fpHex))}},
		{name: "pin openssl form", opts: []Option{WithFingerprint("SHA256 Fingerprint=" + fpColons)}},
		{name: "pin beats an unrelated CA", opts: []Option{WithCAFile(unrelatedCA), WithFingerprint(fpHex)}},
		{name: "pin mismatch", opts: []Option{WithFingerprint(wrong)}, wantErr: []string{"does not match the pinned fingerprint", formatFingerprint(wrong), fpColons}},
		{name: "pin mismatch although the CA trusts it", opts: []Option{WithCAFile(serverCA), WithFingerprint(wrong)}, wantErr: []string{"does not match"}},
		{name: "pin mismatch although insecure", opts: []Option{WithInsecure(true), WithFingerprint(wrong)}, wantErr: []string{"does not match"}},
		{name: "CA file", opts: []Option{WithCAFile(serverCA)}},
		{name: "unrelated CA file", opts: []Option{WithCAFile(unrelatedCA)}, wantErr: []string{fpColons, hint}},
		{name: "insecure", opts: []Option{WithInsecure(true)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]Option{WithToken(testTokenID, testSecret)}, tc.opts...)
			c, err := NewClient(f.srv.URL, opts...)
			if err != nil {
				t.Fatalf("NewClient: %v", err)
			}
			before := len(f.requests())
			v, err := c.Version(context.Background())
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
				if v.Version != "9.1.1" {
					t.Errorf("got version %q, want 9.1.1", v.Version)
				}
				return
			}
			if err == nil {
				t.Fatal("got no error, want a TLS failure")
			}
			var ce *CertError
			if !errors.As(err, &ce) {
				t.Errorf("got %T, want a *CertError in the chain", err)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), testSecret) {
				t.Errorf("error leaks the token secret: %q", err)
			}
			if after := len(f.requests()); after != before {
				t.Errorf("the server got %d requests over an untrusted connection, want 0", after-before)
			}
		})
	}
}

func TestCAFileWithoutCertificates(t *testing.T) {
	p := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(p, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := NewClient("https://pve.example:8006", WithCAFile(p))
	if err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("got %v, want a no-PEM-certificate error", err)
	}
}

func TestNormalizeFingerprint(t *testing.T) {
	want := strings.Repeat("0a", 32)
	tests := []struct{ name, in string }{
		{name: "colons upper", in: strings.TrimSuffix(strings.Repeat("0A:", 32), ":")},
		{name: "bare lower", in: want},
		{name: "spaces around", in: "  " + want + "\n"},
		{name: "openssl", in: "sha256 Fingerprint=" + strings.TrimSuffix(strings.Repeat("0A:", 32), ":")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := normalizeFingerprint(tc.in)
			if err != nil || got != want {
				t.Errorf("got %q, %v; want %q", got, err, want)
			}
		})
	}
	if got := formatFingerprint(want); got != strings.TrimSuffix(strings.Repeat("0A:", 32), ":") {
		t.Errorf("got %q, want colon-separated upper-case", got)
	}
}
