// Command seatd runs seatledger: `seatd dev` starts a whole 3-node cluster in
// one process for trying it out; `seatd serve` runs one node of a real
// cluster.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"slices"

	"github.com/seatledger/seatledger/internal/buildinfo"
)

// gcPercentDefault is seatd's GOGC unless the environment sets one: Go's
// default. Each group's overlay of writes since its last checkpoint (fsm)
// is live heap, and a larger target multiplies it: at 200 a node of the
// recovery workload reached 500-545 MiB, at 100 375-405, for about 3 %
// more CPU per command (docs/PERFORMANCE.md, Settings and their
// measurements).
const gcPercentDefault = 100

const usage = `seatd: the seatledger server

Usage:
  seatd dev   [--data-dir DIR] [--http ADDR] [--grpc ADDR] [--groups N]
              [--admin-http ADDR]
              a local 3-node cluster in one process, with a demo show
  seatd serve --id ID --raft ADDR --grpc ADDR [--http ADDR] --data-dir DIR
              --peers ID=RAFT/GRPC,... [--groups N] [--replicas N]
              [--admin-http ADDR] [--log-json] [--raft-log-level LEVEL]
              [--tls-cert FILE --tls-key FILE --tls-ca FILE [--peer-mtls]
              [--client-ca FILE]]
              one node of a multi-process cluster
  seatd restore --from FILE --id ID --data-dir DIR --peers ID=RAFT/GRPC,...
              [--groups N] [--replicas N]
              seed a NEW node's empty data directory from a backup
              (seatctl snapshot save), before its first serve
  seatd keygen FILE
              write a new ticket key (give every node the same --ticket-key)
  seatd tokengen FILE
              write a new admin token (give every node the same --admin-token-file),
              or a backend key (--backend-key-file)
  seatd version
              print the version, commit and Go version
  seatd certgen DIR [--nodes n1,n2,n3] [--hosts HOST,...] [--days N]
              write a CA and per-node and client TLS certificates (to try TLS
              without openssl; ECDSA P-256)

Run "seatd dev -h" or "seatd serve -h" for the flags.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercentDefault)
	}
	var err error
	switch os.Args[1] {
	case "dev":
		err = runDev(os.Args[2:])
	case "serve":
		err = runServe(os.Args[2:])
	case "restore":
		err = runRestore(os.Args[2:])
	case "keygen":
		err = runKeygen(os.Args[2:])
	case "tokengen":
		err = runTokengen(os.Args[2:])
	case "certgen":
		err = runCertgen(os.Args[2:])
	case "version", "--version":
		fmt.Println("seatd", buildinfo.Get())
		return
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "seatd: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if errors.Is(err, flag.ErrHelp) {
		return // the command printed its usage on stdout
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "seatd: %v\n", err)
		os.Exit(1)
	}
}

// parseFlags parses args with fs. Asked for help (-h, --help), it prints
// the usage on stdout and returns flag.ErrHelp, on which main exits 0; a
// bad flag prints the error and the usage on stderr.
func parseFlags(fs *flag.FlagSet, args []string) error {
	var out bytes.Buffer
	fs.SetOutput(&out)
	err := fs.Parse(args)
	fs.SetOutput(os.Stderr) // for the command's own later fs.Usage()
	if errors.Is(err, flag.ErrHelp) {
		os.Stdout.Write(out.Bytes())
	} else {
		os.Stderr.Write(out.Bytes())
	}
	return err
}

// helpArgs reports whether args ask a command without a flag set for help,
// so that `seatd keygen -h` prints its usage instead of writing a key to a
// file named -h.
func helpArgs(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "-help" || a == "--help" })
}

// printHelp prints a command's usage on stdout and returns flag.ErrHelp.
func printHelp(usage string) error {
	fmt.Println(usage)
	return flag.ErrHelp
}
