package delivery

import (
	"errors"
	"fmt"
	"time"
)

// Config tunes delivery. Zero fields take the defaults.
type Config struct {
	// BackoffMin and BackoffMax bound the wait between attempts at one
	// event: it doubles from BackoffMin after each failure, up to
	// BackoffMax.
	BackoffMin, BackoffMax time.Duration
	// RequestTimeout bounds one attempt (an HTTP POST, a Kafka produce).
	RequestTimeout time.Duration
	// CursorInterval is how often a group's leader records how far each
	// sink got (one log entry per group at most, and only on progress).
	CursorInterval time.Duration
	// PollInterval is how often the node rereads the registrations and
	// which groups it leads.
	PollInterval time.Duration
	// Lanes is how many events of different shows one sink is sent at
	// once per group (a show's events always go one after another).
	Lanes int
	// KafkaBrokers and KafkaTopic configure the Kafka sink (both or
	// neither): seatd serve --kafka-brokers, --kafka-topic.
	KafkaBrokers []string
	KafkaTopic   string
}

// Defaults.
const (
	BackoffMinDefault     = 100 * time.Millisecond
	BackoffMaxDefault     = 30 * time.Second
	RequestTimeoutDefault = 10 * time.Second
	CursorIntervalDefault = time.Second
	PollIntervalDefault   = time.Second
	LanesDefault          = 8
	// lanesMax bounds Lanes: each lane is a request in flight to one
	// endpoint, per group this node leads.
	lanesMax = 64
	// eventsPerReadMax bounds the change records one sink reads at once:
	// all a sink holds in memory is one such read.
	eventsPerReadMax = 256
)

// withDefaults fills zero fields.
func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.BackoffMin, BackoffMinDefault)
	def(&c.BackoffMax, BackoffMaxDefault)
	def(&c.RequestTimeout, RequestTimeoutDefault)
	def(&c.CursorInterval, CursorIntervalDefault)
	def(&c.PollInterval, PollIntervalDefault)
	if c.Lanes == 0 {
		c.Lanes = LanesDefault
	}
	return c
}

// Validate checks the config after defaults.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.BackoffMin < 0 || c.BackoffMax < c.BackoffMin:
		return errors.New("delivery: the backoff must grow from its minimum to its maximum")
	case c.RequestTimeout < 0 || c.CursorInterval < 0 || c.PollInterval < 0:
		return errors.New("delivery: intervals must not be negative")
	case c.Lanes < 1 || c.Lanes > lanesMax:
		return fmt.Errorf("delivery: lanes must be 1..%d", lanesMax)
	case (len(c.KafkaBrokers) == 0) != (c.KafkaTopic == ""):
		return errors.New("--kafka-brokers and --kafka-topic go together")
	case len(c.KafkaTopic) > 249:
		return errors.New("--kafka-topic: a Kafka topic name is at most 249 characters")
	}
	return nil
}
