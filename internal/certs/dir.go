package certs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// Dir is the layout seatd certgen writes, which tests and the process
// harness use too:
//
//	ca.pem, ca-key.pem        the cluster's CA (--tls-ca, seatctl --cacert)
//	NODE.pem, NODE-key.pem    one per node (--tls-cert, --tls-key)
//	client.pem, client-key.pem  for seatctl --cert/--key (--client-ca ca.pem)
type Dir string

// CA is the CA certificate's file.
func (d Dir) CA() string { return filepath.Join(string(d), "ca.pem") }

// CAKey is the CA key's file; keep it off the nodes.
func (d Dir) CAKey() string { return filepath.Join(string(d), "ca-key.pem") }

// Cert is the certificate file of a node or of the client.
func (d Dir) Cert(name string) string { return filepath.Join(string(d), name+".pem") }

// Key is the key file of a node or of the client.
func (d Dir) Key(name string) string { return filepath.Join(string(d), name+"-key.pem") }

// ClientCert is the client certificate's file (seatctl --cert).
func (d Dir) ClientCert() string { return d.Cert(clientName) }

// ClientKey is the client key's file (seatctl --key).
func (d Dir) ClientKey() string { return d.Key(clientName) }

// Node is a node's files with the CA as its peer CA.
func (d Dir) Node(name string) NodeFiles {
	return NodeFiles{CertFile: d.Cert(name), KeyFile: d.Key(name), CAFile: d.CA()}
}

// clientName is the client certificate's file name; caValidity is how long a
// new CA lives, longer than the leaves it signs so they can be renewed.
const (
	clientName = "client"
	caValidity = 10 * 365 * 24 * time.Hour
)

// nodeNameRE keeps node names usable as file names; "ca" and "client" are
// taken.
var nodeNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// MakeDir writes a CA (unless the directory has one already: then it issues
// from it), a certificate for each node valid for hosts, and the client
// certificate. Files that exist are kept, so a node added later gets its
// certificate from the same CA. It returns the files it wrote.
func MakeDir(d Dir, nodes, hosts []string, now time.Time, validity time.Duration) ([]string, error) {
	if len(nodes) == 0 || len(hosts) == 0 || validity <= 0 {
		return nil, fmt.Errorf("%w: nodes, hosts and a positive validity are required", ErrBadRequest)
	}
	for _, n := range nodes {
		if !nodeNameRE.MatchString(n) || n == "ca" || n == clientName {
			return nil, fmt.Errorf("%w: node name %q (letters, digits, . _ -; not ca or client)", ErrBadRequest, n)
		}
	}
	var wrote []string
	ca, err := LoadAuthority(d.CA(), d.CAKey())
	switch {
	case errors.Is(err, fs.ErrNotExist) && !exists(d.CA()) && !exists(d.CAKey()):
		// Backdated a little: a peer whose clock is a minute behind must
		// not see a certificate from the future.
		if ca, err = NewAuthority("seatledger CA", now.Add(-time.Hour), now.Add(caValidity)); err != nil {
			return nil, err
		}
		if err := ca.WriteAuthority(d.CA(), d.CAKey()); err != nil {
			return nil, err
		}
		wrote = append(wrote, d.CA(), d.CAKey())
	case err != nil:
		return nil, err
	}
	issue := func(name string, r Request) error {
		if exists(d.Cert(name)) || exists(d.Key(name)) {
			return nil
		}
		r.NotBefore, r.NotAfter = now.Add(-time.Hour), now.Add(validity)
		iss, err := ca.Issue(r)
		if err != nil {
			return err
		}
		if err := iss.Write(d.Cert(name), d.Key(name)); err != nil {
			return err
		}
		wrote = append(wrote, d.Cert(name), d.Key(name))
		return nil
	}
	for _, n := range nodes {
		if err := issue(n, Request{Name: n, Hosts: hosts, Usage: UsageNode}); err != nil {
			return wrote, err
		}
	}
	if err := issue(clientName, Request{Name: "seatctl", Usage: UsageClient}); err != nil {
		return wrote, err
	}
	return wrote, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
