package main

import (
	"crypto/ed25519"
	"crypto/rand"
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
	if helpArgs(args) {
		return printHelp("usage: seatd keygen FILE\n  write a new ticket key to FILE (give every node the same --ticket-key FILE)")
	}
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

// adminTokenFile is the admin token's default name in seatd dev's data
// directory.
const adminTokenFile = "admin.token"

// loadAdminToken reads the admin token at path (one line); when the file
// does not exist and create is set, it draws one and writes it (mode 0600).
func loadAdminToken(path string, create bool) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && create {
		var raw [24]byte
		rand.Read(raw[:])
		token := base64.RawURLEncoding.EncodeToString(raw[:])
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
			return "", fmt.Errorf("write admin token: %w", err)
		}
		return token, nil
	}
	if err != nil {
		return "", fmt.Errorf("read admin token: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if len(token) < gateway.AdminTokenLenMin || strings.ContainsAny(token, " \t\r\n") {
		return "", fmt.Errorf("admin token %s: want one line of at least %d characters without spaces", path, gateway.AdminTokenLenMin)
	}
	return token, nil
}

// runTokengen writes a new admin token file: seatd tokengen FILE.
func runTokengen(args []string) error {
	if helpArgs(args) {
		return printHelp("usage: seatd tokengen FILE\n  write a new admin token to FILE (give every node the same --admin-token-file FILE)")
	}
	if len(args) != 1 {
		return fmt.Errorf("usage: seatd tokengen FILE")
	}
	if _, err := os.Stat(args[0]); err == nil {
		return fmt.Errorf("%s exists: refusing to replace an admin token", args[0])
	}
	if _, err := loadAdminToken(args[0], true); err != nil {
		return err
	}
	fmt.Printf("wrote %s: give every node --admin-token-file %s, and seatctl --admin-token-file %s\n", args[0], args[0], args[0])
	return nil
}
