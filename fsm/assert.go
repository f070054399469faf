package fsm

import "fmt"

// violated panics: an invariant does not hold. Assertions stay on in
// production: a replica whose state breaks an invariant must stop, not
// diverge (STYLE 5). They are written `if !cond { violated(...) }`: a
// helper that took cond would box its arguments into interfaces before it
// could test cond, an allocation per call even when the invariant holds.
func violated(format string, args ...any) {
	panic(fmt.Sprintf("fsm: invariant violated: "+format, args...))
}

// must panics on an error inside apply: a failed Pebble write or an
// undecodable record is impossible state (STYLE 4).
func must(err error, what string) {
	if err != nil {
		panic(fmt.Sprintf("fsm: %s: %v", what, err))
	}
}
