package checker

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/seatledger/seatledger/jepsen/history"
)

// Check names, in report order.
const (
	CheckLinearizable = "linearizable"
	CheckOrdering     = "ordering"
	CheckS1           = "S1"
	CheckS2           = "S2"
	CheckS3           = "S3"
	CheckS4           = "S4"
	CheckS6           = "S6"
)

var checkOrder = []string{CheckLinearizable, CheckOrdering, CheckS1, CheckS2, CheckS3, CheckS4, CheckS6, CheckRoom}

// Statuses of a check.
const (
	StatusOK       = "ok"       // ran and found nothing
	StatusViolated = "violated" // found at least one violation
	StatusUnknown  = "unknown"  // could not decide some of it (e.g. a porcupine timeout), found nothing
	StatusSkipped  = "skipped"  // had no data to run on (e.g. no final reads)
)

// Overall results.
const (
	ResultValid   = "valid"
	ResultInvalid = "invalid"
	ResultUnknown = "unknown"
)

// violationsPerCheckMax caps the violations a report lists per check; all
// are counted.
const violationsPerCheckMax = 20

// warningsMax caps the warnings a report lists; all are counted.
const warningsMax = 50

// Report is the outcome of Check. It marshals to JSON as is.
type Report struct {
	// Valid is true only when every check ran and none found a violation:
	// Result == "valid". An unknown check (a porcupine timeout) is neither
	// a violation nor a proof.
	Valid  bool          `json:"valid"`
	Result string        `json:"result"`
	Checks []CheckStatus `json:"checks"`
	// Violations lists up to 20 per check; CheckStatus.Violations counts all.
	Violations []Violation `json:"violations"`
	// Shows has porcupine's verdict per show.
	Shows    []ShowResult `json:"shows"`
	Warnings []string     `json:"warnings,omitempty"`
	// WarningsTotal counts warnings, listed or not.
	WarningsTotal int     `json:"warnings_total"`
	Summary       Summary `json:"summary"`
}

// CheckStatus is one check's verdict.
type CheckStatus struct {
	Check      string `json:"check"`
	Status     string `json:"status"`
	Violations int    `json:"violations"`
	// Unknown says what the check could not decide (a show and why).
	Unknown []string `json:"unknown,omitempty"`
	Note    string   `json:"note,omitempty"`
}

// Violation is one thing no correct server could have produced.
type Violation struct {
	Check string `json:"check"`
	Show  string `json:"show,omitempty"`
	Ops   []int  `json:"ops,omitempty"` // history op IDs involved
	Msg   string `json:"msg"`
}

// ShowResult is porcupine's verdict for one show.
type ShowResult struct {
	Show      string  `json:"show"`
	Ops       int     `json:"ops"` // ops given to porcupine
	Result    string  `json:"result"`
	ElapsedMs float64 `json:"elapsed_ms"`
	HTML      string  `json:"html,omitempty"`
}

// reporter collects what the checks find.
type reporter struct {
	r       *Report
	counts  map[string]int
	unknown map[string][]string
	skipped map[string]string
	notes   map[string]string
}

func newReporter() *reporter {
	return &reporter{r: &Report{Violations: []Violation{}}, counts: map[string]int{},
		unknown: map[string][]string{}, skipped: map[string]string{}, notes: map[string]string{}}
}

func (rep *reporter) violation(check, show string, ops []int, format string, args ...any) {
	rep.counts[check]++
	if rep.counts[check] > violationsPerCheckMax {
		return
	}
	rep.r.Violations = append(rep.r.Violations, Violation{Check: check, Show: show,
		Ops: append([]int(nil), ops...), Msg: fmt.Sprintf(format, args...)})
}

func (rep *reporter) warnf(format string, args ...any) {
	rep.r.WarningsTotal++
	if rep.r.WarningsTotal <= warningsMax {
		rep.r.Warnings = append(rep.r.Warnings, fmt.Sprintf(format, args...))
	}
}

func (rep *reporter) undecided(check, format string, args ...any) {
	rep.unknown[check] = append(rep.unknown[check], fmt.Sprintf(format, args...))
}

// finish fills in the check statuses and the overall result.
func (rep *reporter) finish() *Report {
	r := rep.r
	r.Result = ResultValid
	for _, c := range checkOrder {
		cs := CheckStatus{Check: c, Status: StatusOK, Violations: rep.counts[c], Unknown: rep.unknown[c], Note: rep.notes[c]}
		switch {
		case cs.Violations > 0:
			cs.Status = StatusViolated
			r.Result = ResultInvalid
		case len(cs.Unknown) > 0:
			cs.Status = StatusUnknown
			if r.Result == ResultValid {
				r.Result = ResultUnknown
			}
		case rep.skipped[c] != "":
			cs.Status, cs.Note = StatusSkipped, rep.skipped[c]
		}
		r.Checks = append(r.Checks, cs)
	}
	sort.SliceStable(r.Violations, func(i, j int) bool {
		return checkRank(r.Violations[i].Check) < checkRank(r.Violations[j].Check)
	})
	r.Valid = r.Result == ResultValid
	return r
}

func checkRank(c string) int {
	for i, x := range checkOrder {
		if x == c {
			return i
		}
	}
	return len(checkOrder)
}

// WriteText prints a human summary of the report.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "seatledger history check: %s\n", strings.ToUpper(r.Result))
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "  %-13s %-9s", c.Check, c.Status)
		if c.Violations > 0 {
			fmt.Fprintf(&b, " %d violation(s)", c.Violations)
		}
		if c.Note != "" {
			fmt.Fprintf(&b, " (%s)", c.Note)
		}
		b.WriteString("\n")
		for _, u := range c.Unknown {
			fmt.Fprintf(&b, "      unknown: %s\n", u)
		}
	}
	if len(r.Violations) > 0 {
		b.WriteString("violations:\n")
		for _, v := range r.Violations {
			fmt.Fprintf(&b, "  [%s] show %s ops %v: %s\n", v.Check, v.Show, v.Ops, v.Msg)
		}
	}
	for _, s := range r.Shows {
		if s.HTML != "" {
			fmt.Fprintf(&b, "linearizability visualization of show %s: %s\n", s.Show, s.HTML)
		}
	}
	if r.WarningsTotal > 0 {
		fmt.Fprintf(&b, "warnings (%d):\n", r.WarningsTotal)
		for _, wn := range r.Warnings {
			fmt.Fprintf(&b, "  %s\n", wn)
		}
	}
	r.Summary.writeText(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// kinds lists the op kinds in summary order.
var kinds = []history.Kind{history.KindHold, history.KindConfirm, history.KindRelease, history.KindExtend,
	history.KindRefund, history.KindRead, history.KindGetHold, history.KindQueueEntry, history.KindLeave}
