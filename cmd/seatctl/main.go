// Command seatctl is the operators' CLI for seatledger, in the manner of
// etcdctl and `consul operator raft`: cluster status and the shard map,
// leadership transfers and replica moves, digest checks, and support work on
// shows and holds. It speaks only the public gRPC Admin and Booking APIs of
// seatd nodes (--endpoints or SEATCTL_ENDPOINTS).
//
// Exit status: 0 on success, 1 when the command failed (one line on stderr
// says why), 2 for a usage error.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// defaultEndpoint is where `seatd dev` serves gRPC (its --grpc default), so
// seatctl works against a dev cluster without flags.
const defaultEndpoint = "127.0.0.1:9090"

// endpointsEnv names the environment variable that replaces the default
// endpoints; --endpoints beats it.
const endpointsEnv = "SEATCTL_ENDPOINTS"

// adminTokenEnv names the environment variable that holds the admin token.
const adminTokenEnv = "SEATCTL_ADMIN_TOKEN"

// Environment variables of the TLS flags, after etcdctl's ETCDCTL_CACERT.
const (
	cacertEnv = "SEATCTL_CACERT"
	certEnv   = "SEATCTL_CERT"
	keyEnv    = "SEATCTL_KEY"
)

// timeoutDefault bounds one RPC; retried steps get timeoutDefault*3.
const timeoutDefault = 5 * time.Second

// Output formats of -o.
const (
	outputTable = "table"
	outputJSON  = "json"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

// run executes one seatctl command line and returns its exit status. Tests
// call it in-process with captured output and their own environment.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	a := &app{out: stdout, errOut: stderr}
	defer a.close()
	root := newRootCmd(a, getenv)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	msg := oneLine(err.Error())
	if hint := a.hint(msg); hint != "" {
		msg += " (hint: " + hint + ")"
	}
	fmt.Fprintf(stderr, "seatctl: %s\n", msg)
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitFailure
}

// usageError is a command line seatctl cannot run; it exits 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// oneLine folds a message onto one line, so every failure is one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// newRootCmd builds the command tree; a is filled from the global flags.
func newRootCmd(a *app, getenv func(string) string) *cobra.Command {
	endpoints := []string{defaultEndpoint}
	if env := splitList(getenv(endpointsEnv)); len(env) > 0 {
		endpoints = env
	}
	root := &cobra.Command{
		Use:   "seatctl",
		Short: "Operate a seatledger cluster: status, shards, nodes, leaders, replicas, digests, shows and holds",
		Long: `seatctl operates a seatledger cluster over the gRPC APIs of its seatd nodes.

Endpoints come from --endpoints, else $SEATCTL_ENDPOINTS, else ` + defaultEndpoint + ` (seatd dev).
TLS is on when --cacert (or --cert/--key) is given: the nodes' certificates are always verified.
Exit status: 0 success, 1 failure (one line on stderr says why), 2 usage error.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          noSubcommand,
		RunE:          func(c *cobra.Command, _ []string) error { return c.Help() },
		PersistentPreRunE: func(c *cobra.Command, _ []string) error {
			// The token is read from the environment here, not as the
			// flag's default: --help prints defaults, and a secret must
			// never reach a terminal or a CI log that way.
			if f := c.Flag("admin-token"); f != nil && !f.Changed {
				a.token = getenv(adminTokenEnv)
			}
			return a.validate()
		},
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usagef("%v (see %s --help)", err, c.CommandPath())
	})
	pf := root.PersistentFlags()
	pf.StringSliceVar(&a.endpoints, "endpoints", endpoints, "gRPC addresses of seatd nodes, comma-separated (env "+endpointsEnv+")")
	pf.StringVarP(&a.output, "output", "o", outputTable, "output format: table or json")
	// etcdctl's name for the same flag, for hands that type it.
	pf.StringVarP(&a.output, "write-out", "w", outputTable, "output format: table or json (alias of --output)")
	pf.StringVar(&a.token, "admin-token", "", "the cluster's admin token, for admin calls (env "+adminTokenEnv+"; never shown here)")
	pf.StringVar(&a.tokenFile, "admin-token-file", "", "read the admin token from this file (seatd dev: DATA_DIR/admin.token)")
	pf.Int64Var(&a.firstSentMs, "first-sent", 0, "with --request-id, to retry a write from an earlier run: the Unix time in ms seatctl printed with its request id (default: now)")
	pf.DurationVar(&a.timeout, "timeout", timeoutDefault, "bound on one call; retried steps (membership, writes) get 3x")
	pf.StringVar(&a.tlsFiles.CAFile, "cacert", getenv(cacertEnv), "speak TLS and verify the nodes with this CA certificate (seatd certgen: ca.pem) (env "+cacertEnv+")")
	pf.StringVar(&a.tlsFiles.CertFile, "cert", getenv(certEnv), "client certificate, for nodes started with --client-ca (env "+certEnv+")")
	pf.StringVar(&a.tlsFiles.KeyFile, "key", getenv(keyEnv), "key of --cert (env "+keyEnv+")")
	root.AddCommand(
		newStatusCmd(a),
		newShardsCmd(a),
		newLeaderCmd(a),
		newNodeCmd(a),
		newGroupCmd(a),
		newCheckCmd(a),
		newSeatmapCmd(a),
		newShowCmd(a),
		newHoldCmd(a),
		newConfirmCmd(a),
		newReleaseCmd(a),
		newTicketCmd(a),
		newSnapshotCmd(a),
		newWebhookCmd(a),
		newWaitingRoomCmd(a),
		newVersionCmd(),
	)
	return root
}

// parentCmd is a command that only groups subcommands: alone it prints its
// help; with an unknown subcommand it is a usage error.
func parentCmd(use, short string, children ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  noSubcommand,
		RunE:  func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	c.AddCommand(children...)
	return c
}

// noSubcommand rejects arguments to a command that only has subcommands.
func noSubcommand(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unknown command %q for %q (see %s --help)", args[0], c.CommandPath(), c.CommandPath())
	}
	return nil
}

// exactArgs is cobra.ExactArgs as a usage error naming the arguments.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s takes %s, got %d argument(s) (see %s --help)", c.CommandPath(), names, len(args), c.CommandPath())
		}
		return nil
	}
}

// minArgs is cobra.MinimumNArgs as a usage error naming the arguments.
func minArgs(n int, names string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) < n {
			return usagef("%s takes %s, got %d argument(s) (see %s --help)", c.CommandPath(), names, len(args), c.CommandPath())
		}
		return nil
	}
}

// splitList splits a comma-separated list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
