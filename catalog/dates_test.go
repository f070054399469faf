// This file proves that a browse date is one calendar day in the city's
// time zone (23 or 25 hours across a DST change, never a shifted day), and
// that an unknown zone reads as UTC.
package catalog

import (
	"math"
	"testing"
	"time"
)

func TestDayWindow(t *testing.T) {
	london, err := time.LoadLocation("Europe/London")
	if err != nil {
		t.Fatal(err)
	}
	hour := int64(time.Hour / time.Millisecond)
	now := time.Date(2026, 3, 29, 12, 0, 0, 0, london).UnixMilli()
	tests := []struct {
		date     string
		loc      *time.Location
		today    bool
		from, to int64
		ok       bool
	}{
		{"2026-01-10", time.UTC, false, time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC).UnixMilli(), time.Date(2026, 1, 11, 0, 0, 0, 0, time.UTC).UnixMilli(), true},
		// London's clocks go forward on 2026-03-29: a day of 23 hours.
		{"2026-03-29", london, false, time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC).UnixMilli(), time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC).UnixMilli() + 23*hour, true},
		// ... and back on 2026-10-25: 25 hours, starting at 23:00 UTC.
		{"2026-10-25", london, false, time.Date(2026, 10, 24, 23, 0, 0, 0, time.UTC).UnixMilli(), time.Date(2026, 10, 24, 23, 0, 0, 0, time.UTC).UnixMilli() + 25*hour, true},
		{"", london, true, time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC).UnixMilli(), time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC).UnixMilli() + 23*hour, true},
		{"", london, false, now, math.MaxInt64, true},
		{"2026-02-30", time.UTC, false, 0, 0, false},
		{"29/03/2026", time.UTC, false, 0, 0, false},
	}
	for _, tt := range tests {
		from, to, ok := DayWindow(tt.date, tt.loc, now, tt.today)
		if from != tt.from || to != tt.to || ok != tt.ok {
			t.Errorf("DayWindow(%q, %v, today=%v) = %d, %d, %v, want %d, %d, %v", tt.date, tt.loc, tt.today, from, to, ok, tt.from, tt.to, tt.ok)
		}
	}
	if Zone("") != time.UTC || Zone("Not/AZone") != time.UTC || Zone("Europe/London").String() != "Europe/London" {
		t.Errorf(`Zone("") = %v, Zone("Not/AZone") = %v, Zone("Europe/London") = %v, want UTC, UTC, Europe/London`, Zone(""), Zone("Not/AZone"), Zone("Europe/London"))
	}
}
