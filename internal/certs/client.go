package certs

import (
	"crypto/tls"
	"errors"
	"fmt"
)

// Errors of a client's TLS flags.
var (
	ErrClientCertWithoutKey = errors.New("certs: --cert needs --key")
	ErrClientKeyWithoutCert = errors.New("certs: --key needs --cert")
)

// ClientFiles names a client's TLS files (seatctl's --cacert, --cert and
// --key, after etcdctl). The zero value means plaintext; any file turns TLS
// on, and the server's certificate is always verified.
type ClientFiles struct {
	// CAFile holds the CA certificates the server is verified with; empty
	// means the system's roots.
	CAFile string
	// CertFile and KeyFile are the client's own certificate and key, for
	// clusters started with --client-ca.
	CertFile, KeyFile string
}

// Enabled reports whether the client speaks TLS.
func (f ClientFiles) Enabled() bool { return f.CAFile != "" || f.CertFile != "" || f.KeyFile != "" }

// Validate reports the first impossible combination. It reads no file.
func (f ClientFiles) Validate() error {
	switch {
	case f.CertFile != "" && f.KeyFile == "":
		return ErrClientCertWithoutKey
	case f.KeyFile != "" && f.CertFile == "":
		return ErrClientKeyWithoutCert
	}
	return nil
}

// Config reads the files and returns the client's TLS configuration, or nil
// for plaintext. The server name comes from each dialed address.
func (f ClientFiles) Config() (*tls.Config, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	if !f.Enabled() {
		return nil, nil
	}
	c := &tls.Config{MinVersion: PublicVersionMin}
	if f.CAFile != "" {
		cas, err := readCerts(f.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--cacert: %w", err)
		}
		c.RootCAs = poolOf(cas)
	}
	if f.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("certs: --cert %s / --key %s: %w", f.CertFile, f.KeyFile, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}
