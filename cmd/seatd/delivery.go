package main

import (
	"context"
	"strings"

	"github.com/seatledger/seatledger/delivery"
)

// Events delivered to backends (docs/WEBHOOKS.md): every node runs a
// deliverer, which works for the groups the node leads.

// startDelivery starts the node's deliverer; close stops it with the
// registry goroutines (stopBackground, bg), before raft closes.
func (n *node) startDelivery(d *delivery.Deliverer) {
	ctx, cancel := context.WithCancel(context.Background())
	prev := n.stopBackground
	n.stopBackground = func() { cancel(); prev() }
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		d.Run(ctx)
	}()
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}
