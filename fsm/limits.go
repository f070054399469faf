package fsm

// Limits, named once. The gateway checks them to reject early; the FSM checks
// them again because the log is the only thing replicas agree on.
const (
	// SeatsPerHoldMax bounds one all-or-nothing hold.
	SeatsPerHoldMax = 10
	// HoldTTLDefault applies when a hold asks for no TTL.
	HoldTTLDefaultMs = 5 * 60 * 1000
	// HoldTTLMinMs and HoldTTLMaxMs bound a requested TTL.
	HoldTTLMinMs = 1000
	HoldTTLMaxMs = 30 * 60 * 1000

	// HoldLifetimeMaxMs caps how long a hold can live in total, Extend
	// included: expires_at <= created_at + HoldLifetimeMaxMs.
	HoldLifetimeMaxMs = 45 * 60 * 1000
	// HoldsPerClientPerShowMax bounds a client's live holds in one show,
	// against scalping: past it a hold is refused with CODE_TOO_MANY_HOLDS.
	HoldsPerClientPerShowMax = 8
	// QueueLenMax bounds the waiters of one show's queue.
	QueueLenMax = 10000
	// QueueClaimWindowMs is how long an offered hold waits for its waiter
	// to confirm it before it expires and the seats move on.
	QueueClaimWindowMs = 2 * 60 * 1000
	// QueueScanPerEntryMax bounds the waiters one log entry considers per
	// show when it offers freed seats, so one entry never stalls apply.
	QueueScanPerEntryMax = 1024
	// HoldTokenLenMax bounds a hold token in requests (issued ones are 22).
	HoldTokenLenMax = 64
	// TokenKeyBytes is the size of a show's hold-token key.
	TokenKeyBytes = 32
	// RefundReasonLenMax bounds a refund's reason.
	RefundReasonLenMax = 200

	// ShowIDLenMax bounds a show id ([A-Za-z0-9._:-]).
	ShowIDLenMax = 64
	// HoldIDLenMax bounds a hold id in requests.
	HoldIDLenMax = 64
	// ClientIDLenMax and RequestIDLenMax bound the exactly-once identity.
	ClientIDLenMax  = 64
	RequestIDLenMax = 128
	// PaymentRefLenMax bounds a payment reference.
	PaymentRefLenMax = 128
	// TitleLenMax bounds a show title.
	TitleLenMax = 200
	// SeatIDLenMax bounds one seat id in a request ("ABC500").
	SeatIDLenMax = 8

	// RowsPerShowMax, SeatsPerRowMax and SeatsPerShowMax bound a layout.
	RowsPerShowMax  = 100
	RowNameLenMax   = 3
	SeatsPerRowMax  = 500
	SeatsPerShowMax = 10000
	// CategoriesPerShowMax bounds price classes in a show.
	CategoriesPerShowMax = 16
	// CategoryNameLenMax bounds a category name.
	CategoryNameLenMax = 32
	// PriceMinorMax bounds a seat price in minor units.
	PriceMinorMax = 1_000_000_000

	// ExpirePerEntryDefault and ExpirePerEntryMax bound how many holds one
	// Expire entry frees, so one entry never stalls the apply loop.
	ExpirePerEntryDefault = 1024
	ExpirePerEntryMax     = 8192
	// BatchCommandsMax bounds the commands of one group-commit entry.
	BatchCommandsMax = 4096

	// RequestRetentionMs is how long a (client_id, request_id) is
	// remembered, at least, by the log clock from when it was applied.
	RequestRetentionMs = 24 * 60 * 60 * 1000
	// RequestHorizonMs is the retry horizon a client can count on: a retry
	// that says when its request was first sent (first_sent_at_ms) is
	// answered from the record within it, and refused with
	// CODE_REQUEST_EXPIRED past it without its record, never executed
	// again. It is shorter than the retention by more than
	// FirstSentAheadMaxMs, so a record outlives the horizon of every
	// request it answers (requests.go), and the rest of the gap absorbs
	// clocks that disagree.
	RequestHorizonMs = RequestRetentionMs - 60*60*1000
	// FirstSentAheadMaxMs bounds how far past the log clock (the gateway:
	// its own clock) a first_sent_at_ms may lie: a first send dated in the
	// future would stretch the horizon of its retries. Safety needs only
	// that it stays below the retention's lead over the horizon; it is
	// generous within that, because a client's clock that runs ahead by
	// more gets every stamped write refused.
	FirstSentAheadMaxMs = 10 * 60 * 1000

	// EventRetentionMs is the change log horizon: a show's seat changes
	// are kept for at least this long by the log clock, so a watcher that
	// lost its stream resumes from its last revision within it; from an
	// older revision it starts again from a seat map (reset).
	EventRetentionMs = 15 * 60 * 1000
	// EventRetentionMaxMs is the longest a change is kept: records are
	// pruned a bucket of log time at a time (events.go).
	EventRetentionMaxMs = EventRetentionMs + eventBucketMs

	// ClockMaxMs caps the log clock (9999-12-31T23:59:59.999Z), so that
	// clock + HoldTTLMaxMs never overflows.
	ClockMaxMs = 253402300799999
)

// Node registry limits (node.go).
const (
	// NodesMax bounds the registry's records, removed nodes included (their
	// ids stay retired): one registry read is one short scan.
	NodesMax = 64
	// NodeIDLenMax bounds a node id (ValidID's alphabet).
	NodeIDLenMax = 64
	// NodeAddrLenMax bounds a node's HOST:PORT address.
	NodeAddrLenMax = 255
)

// Catalog limits (catalog.go). Ids of cities, cinemas, screens and movies
// follow ValidID's alphabet.
const (
	// CatalogIDLenMax bounds a city, cinema, screen or movie id.
	CatalogIDLenMax = 64
	// NameLenMax bounds the name of a city, cinema or screen.
	NameLenMax = 100
	// AddressLenMax bounds a cinema's address.
	AddressLenMax = 200
	// TimeZoneLenMax bounds an IANA time zone name ("America/Argentina/...").
	TimeZoneLenMax = 64
	// ScreensPerCinemaMax bounds a cinema's screens; each has a layout
	// within the show limits above (RowsPerShowMax, SeatsPerShowMax).
	ScreensPerCinemaMax = 32
	// MovieDurationMinutesMax bounds a movie's running time.
	MovieDurationMinutesMax = 24 * 60

	// PageSizeDefault and PageSizeMax bound one page of a browse listing
	// (cities, movies, cinemas, shows); a show page reads one free-seat
	// count per show, so this also bounds that fan-out.
	PageSizeDefault = 20
	PageSizeMax     = 100
	// PageTokenLenMax bounds a page token in requests.
	PageTokenLenMax = 512
	// SearchQueryLenMax bounds a search's keywords; SearchWordsMax their
	// number.
	SearchQueryLenMax = 100
	SearchWordsMax    = 8
	// BrowseScanMax bounds the index entries one browse page may read to
	// fill itself (search filters, shows that are over): a page that hits
	// it comes back short, with a token to continue.
	BrowseScanMax = 5000
)

// Waiting room limits (waitroom.go).
const (
	// RoomWindowMs is an arrival window: arrivals within one get random
	// places among themselves, after every earlier window's.
	RoomWindowMs = 1000
	// RoomAdmitPerSecondMax bounds a room's admission rate.
	RoomAdmitPerSecondMax = 10_000
	// RoomAdmissionTTLDefaultMs is how long an admission token lasts when
	// the room's operator sets no TTL; RoomAdmissionTTLMinMs and
	// RoomAdmissionTTLMaxMs bound one that is set.
	RoomAdmissionTTLDefaultMs = 2 * 60 * 1000
	RoomAdmissionTTLMinMs     = 10 * 1000
	RoomAdmissionTTLMaxMs     = 30 * 60 * 1000
	// RoomEntriesMax bounds the entries of one room (rejoins included);
	// past it a join is CODE_ROOM_FULL.
	RoomEntriesMax = 500_000
	// RoomAutoArrivalsPerSecondMax bounds the threshold of holds a second
	// that opens an armed room by itself (roomauto.go).
	RoomAutoArrivalsPerSecondMax = 1_000_000
	// RoomSeedBytesMax bounds a join's seed (the gateway draws 16 bytes).
	RoomSeedBytesMax = 32
	// AdmitPerEntryDefault and AdmitPerEntryMax bound how many entries one
	// Admit entry admits, so one entry never stalls the apply loop.
	AdmitPerEntryDefault = 1024
	AdmitPerEntryMax     = 8192
	// AdmissionTokenLenMax bounds an admission token in requests (issued
	// ones are 22 characters).
	AdmissionTokenLenMax = 64
)
