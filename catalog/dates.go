package catalog

import (
	"math"
	"time"
	// Every node must read a city's dates in the same zone, whatever tz
	// database its machine has (or lacks).
	_ "time/tzdata"
)

// Zone loads a city's IANA time zone; empty (or, should a node lack it,
// unknown) is UTC.
func Zone(name string) *time.Location {
	if name == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC
	}
	return loc
}

// DateLayout is the date format of browse requests.
const DateLayout = "2006-01-02"

// DayWindow returns the [from, to) Unix ms of a date (YYYY-MM-DD) in loc.
// Without a date it is today in loc when today is set, else from nowMs on.
func DayWindow(date string, loc *time.Location, nowMs int64, today bool) (from, to int64, ok bool) {
	if date == "" && !today {
		return nowMs, math.MaxInt64, true
	}
	var day time.Time
	if date == "" {
		now := time.UnixMilli(nowMs).In(loc)
		day = time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	} else {
		d, err := time.ParseInLocation(DateLayout, date, loc)
		if err != nil {
			return 0, 0, false
		}
		day = d
	}
	// AddDate, not 24 hours: a day with a DST change has 23 or 25.
	return day.UnixMilli(), day.AddDate(0, 0, 1).UnixMilli(), true
}
