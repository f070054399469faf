// Package catalog is what a catalog read means: the listings of cities,
// cinemas, movies and shows that a browse query asks for, read from one
// consistent view of the catalog group's state machine, with dates read as
// calendar days in each city's time zone. The catalog's records and their
// rules live in fsm/ (catalog.go, create*.go, listshow.go); which replica
// serves a browse read, within what staleness, is routing and lives in
// shard/ (browse.go); the API and its validation live in gateway/
// (catalog.go, browse.go). This package sits between them, so that the
// replica that serves a read and the tests that pin its meaning call the
// same function, and shard/ stays routing.
package catalog
