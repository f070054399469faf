// This file proves the Kafka sink end to end: three in-process seatd nodes
// configured as --kafka-brokers and --kafka-topic would, producing to
// franz-go's in-process kfake cluster. Every event of two shows in
// different groups arrives, keyed by its show id, in revision order per
// show, from whichever node leads each group.
package main

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seatledger/seatledger/delivery"
)

func TestKafkaSink(t *testing.T) {
	const topic = "seatledger-events"
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, topic))
	if err != nil {
		t.Fatalf("kfake.NewCluster: %v", err)
	}
	t.Cleanup(kc.Close)
	c := startCluster(t, false, fastDelivery, func(cfg *nodeConfig) {
		cfg.Delivery.KafkaBrokers, cfg.Delivery.KafkaTopic = kc.ListenAddrs(), topic
	})

	shows := []string{c.showInGroup("kafka", 1), c.showInGroup("kafka", 2)}
	want := map[string][]string{}
	for i, show := range shows {
		c.createShow(0, show)
		h := c.mustHold(i, show, "fan", show+"-h", 300, "A1", "A2").HoldId
		c.mustConfirm(i, show, h, "fan", show+"-c", "pay")
		h2 := c.mustHold(i, show, "fan", show+"-h2", 300, "B1").HoldId
		c.mustRelease(i, show, h2, "fan", show+"-r")
		want[show] = []string{"hold.created(" + h + ")", "booking.confirmed(" + h + ")", "hold.created(" + h2 + ")", "hold.released(" + h2 + ")"}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	defer cl.Close()
	got := map[string][]string{}
	seen := map[string]bool{}
	deadline := time.Now().Add(clusterWaitMax)
	for !sameSteps(got, want) {
		if time.Now().After(deadline) {
			t.Fatalf("Kafka events by show = %v, want %v", got, want)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			var e delivery.Event
			if err := json.Unmarshal(r.Value, &e); err != nil {
				t.Fatalf("record %q: %v", r.Value, err)
			}
			if string(r.Key) != e.ShowID {
				t.Errorf("event %s of show %s has key %q, want the show id", e.ID, e.ShowID, r.Key)
			}
			if !seen[e.ID] { // at least once: repeats are dropped by id
				seen[e.ID] = true
				got[e.ShowID] = append(got[e.ShowID], step(e))
			}
		})
	}
}

func sameSteps(got, want map[string][]string) bool {
	for show, w := range want {
		if !slices.Equal(got[show], w) {
			return false
		}
	}
	return true
}
