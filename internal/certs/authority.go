package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// An Authority is a small CA for trying TLS without openssl (seatd certgen)
// and for tests, which make their certificates in the test and never commit
// keys. Keys are ECDSA P-256: small, fast to verify, and accepted by every
// TLS stack seatledger's clients use.
type Authority struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// Usage says what an issued certificate may authenticate.
type Usage int

const (
	// UsageNode is a seatd node's certificate: a server to its clients and
	// peers, and a client when it dials a peer.
	UsageNode Usage = iota + 1
	// UsageClient is a client's certificate (seatctl against a cluster
	// started with --client-ca).
	UsageClient
)

// Request describes a certificate to issue.
type Request struct {
	// Name is the subject's common name (a node id, "seatctl").
	Name string
	// Hosts are the DNS names and IP addresses the certificate is valid for;
	// a node needs at least one.
	Hosts []string
	// NotBefore and NotAfter bound its validity.
	NotBefore, NotAfter time.Time
	Usage               Usage
}

// Errors of issuing.
var (
	ErrBadRequest = errors.New("certs: bad certificate request")
	ErrNotCA      = errors.New("certs: not a CA certificate")
)

// Validate reports the first thing wrong with the request.
func (r Request) Validate() error {
	switch {
	case r.Name == "":
		return fmt.Errorf("%w: a name is required", ErrBadRequest)
	case !r.NotAfter.After(r.NotBefore):
		return fmt.Errorf("%w: NotAfter %v is not after NotBefore %v", ErrBadRequest, r.NotAfter, r.NotBefore)
	case r.Usage != UsageNode && r.Usage != UsageClient:
		return fmt.Errorf("%w: unknown usage %d", ErrBadRequest, r.Usage)
	case r.Usage == UsageNode && len(r.Hosts) == 0:
		return fmt.Errorf("%w: node %s needs at least one host", ErrBadRequest, r.Name)
	}
	return nil
}

// NewAuthority makes a self-signed CA valid from notBefore to notAfter.
func NewAuthority(name string, notBefore, notAfter time.Time) (*Authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"seatledger"}},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		// It signs leaves only: a stolen node key cannot mint a sub-CA.
		MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("certs: create CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &Authority{Cert: cert, Key: key}, nil
}

// LoadAuthority reads a CA written by WriteAuthority, to issue more
// certificates from it (a node added later).
func LoadAuthority(certPath, keyPath string) (*Authority, error) {
	certs, err := readCerts(certPath)
	if err != nil {
		return nil, err
	}
	if !certs[0].IsCA {
		return nil, fmt.Errorf("%w: %s", ErrNotCA, certPath)
	}
	b, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, fmt.Errorf("certs: no PEM key in %s", keyPath)
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("certs: %s: %w", keyPath, err)
	}
	if !key.PublicKey.Equal(certs[0].PublicKey) {
		return nil, fmt.Errorf("certs: %s is not the key of %s", keyPath, certPath)
	}
	return &Authority{Cert: certs[0], Key: key}, nil
}

// Issued is a certificate and its key, PEM-encoded.
type Issued struct {
	CertPEM, KeyPEM []byte
}

// Issue signs a new key's certificate as r describes.
func (a *Authority) Issue(r Request) (Issued, error) {
	if err := r.Validate(); err != nil {
		return Issued{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Issued{}, err
	}
	serial, err := newSerial()
	if err != nil {
		return Issued{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: r.Name, Organization: []string{"seatledger"}},
		NotBefore:    r.NotBefore,
		NotAfter:     r.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if r.Usage == UsageNode {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	for _, h := range r.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.Cert, &key.PublicKey, a.Key)
	if err != nil {
		return Issued{}, fmt.Errorf("certs: issue %s: %w", r.Name, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return Issued{}, err
	}
	return Issued{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// CertPEM is the CA's certificate, PEM-encoded: the --tls-ca and --cacert
// file.
func (a *Authority) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.Cert.Raw})
}

// WriteAuthority writes the CA's certificate and key (the key mode 0600).
func (a *Authority) WriteAuthority(certPath, keyPath string) error {
	keyDER, err := x509.MarshalECPrivateKey(a.Key)
	if err != nil {
		return err
	}
	return Issued{CertPEM: a.CertPEM(), KeyPEM: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})}.
		Write(certPath, keyPath)
}

// Write writes the certificate (mode 0644) and the key (mode 0600), creating
// their directories. It refuses to replace an existing key: a key someone
// already deployed must not change under them.
func (i Issued) Write(certPath, keyPath string) error {
	for _, p := range []string{certPath, keyPath} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("certs: %w", err)
		}
	}
	kf, err := os.OpenFile(keyPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	if _, err := kf.Write(i.KeyPEM); err != nil {
		kf.Close()
		return fmt.Errorf("certs: write %s: %w", keyPath, err)
	}
	if err := kf.Close(); err != nil {
		return fmt.Errorf("certs: write %s: %w", keyPath, err)
	}
	if err := os.WriteFile(certPath, i.CertPEM, 0o644); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	return nil
}

// newSerial draws a 128-bit serial number, as RFC 5280 allows at most 20
// bytes and CAs must not repeat one.
func newSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
}
