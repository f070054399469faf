package main

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/seatledger/seatledger/gateway"
)

// The ticket key signs ticket codes (gateway/tickets.go). Its file holds the
// Ed25519 seed in unpadded base64url on one line. Every node of a cluster
// must load the same file, so one public key verifies every ticket.

// ticketKeyFile is the key's default name inside a data directory.
const ticketKeyFile = "ticket.key"

// loadTicketKey reads the key at path; when the file does not exist and
// create is set, it draws a key and writes it (mode 0600).
func loadTicketKey(path string, create bool) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && create {
		k := gateway.NewTicketKey()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		seed := base64.RawURLEncoding.EncodeToString(k.Seed())
		if err := os.WriteFile(path, []byte(seed+"\n"), 0o600); err != nil {
			return nil, fmt.Errorf("write ticket key: %w", err)
		}
		return k, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read ticket key: %w", err)
	}
	seed, err := base64.RawURLEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("ticket key %s: want a %d-byte Ed25519 seed in unpadded base64url", path, ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// runKeygen writes a new ticket key file: seatd keygen FILE.
func runKeygen(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: seatd keygen FILE")
	}
	if _, err := os.Stat(args[0]); err == nil {
		return fmt.Errorf("%s exists: refusing to replace a ticket key (tickets signed with it would stop verifying)", args[0])
	}
	k, err := loadTicketKey(args[0], true)
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s; public key %s\n", args[0], base64.RawURLEncoding.EncodeToString(k.Public().(ed25519.PublicKey)))
	return nil
}
