package fsm

import "github.com/seatledger/seatledger/proto/ledgerpb"

// ValidateSetRoom checks an open or close of a show's waiting room.
func ValidateSetRoom(c *ledgerpb.SetRoomCmd) *FieldError {
	if !ValidID(c.ShowId, ShowIDLenMax) {
		return fieldErr("show_id", "must be 1..%d characters of [A-Za-z0-9._:-]", ShowIDLenMax)
	}
	if c.AutoOpenArrivalsPerSecond > RoomAutoArrivalsPerSecondMax {
		return fieldErr("auto_open_arrivals_per_second", "must be at most %d", RoomAutoArrivalsPerSecondMax)
	}
	if !c.Open && c.AutoOpenArrivalsPerSecond == 0 {
		return nil
	}
	if c.AdmitPerSecond < 1 || c.AdmitPerSecond > RoomAdmitPerSecondMax {
		return fieldErr("admit_per_second", "must be in 1..%d to open the room or arm it", RoomAdmitPerSecondMax)
	}
	if t := c.AdmissionTtlMs; t != 0 && (t < RoomAdmissionTTLMinMs || t > RoomAdmissionTTLMaxMs) {
		return fieldErr("admission_ttl_seconds", "must be in %d..%d seconds", RoomAdmissionTTLMinMs/1000, RoomAdmissionTTLMaxMs/1000)
	}
	return nil
}

// ValidateJoinRoom checks a join of a show's waiting room.
func ValidateJoinRoom(c *ledgerpb.JoinRoomCmd) *FieldError {
	if !ValidID(c.ShowId, ShowIDLenMax) {
		return fieldErr("show_id", "must be 1..%d characters of [A-Za-z0-9._:-]", ShowIDLenMax)
	}
	if len(c.Seed) > RoomSeedBytesMax {
		return fieldErr("seed", "longer than %d bytes", RoomSeedBytesMax)
	}
	return nil
}
