package acktype

import (
	"fmt"
	"strconv"
	"strings"
)

// Type is how a record was dealt with. Its value is the id Kafka uses on the wire.
type Type int8

const (
	// Gap marks an acquired offset that held no record. The client sends it on its own; it is
	// never valid from the application, and Parse and FromID reject it.
	Gap Type = 0
	// Accept: the record was processed and is done.
	Accept Type = 1
	// Release: the record was not processed; the broker delivers it again.
	Release Type = 2
	// Reject: the record cannot be processed; the broker never delivers it again.
	Reject Type = 3
	// Renew: the record is still being processed; the broker extends its acquisition lock. Needs
	// ShareFetch and ShareAcknowledge v2 (Kafka 4.2).
	Renew Type = 4
)

var names = [...]string{Gap: "gap", Accept: "accept", Release: "release", Reject: "reject", Renew: "renew"}

// String returns Kafka's lowercase name of t ("accept", "release", "reject", "renew", "gap"), or
// "acktype(N)" for a value that is not a type.
func (t Type) String() string {
	if t >= 0 && int(t) < len(names) {
		return names[t]
	}
	return "acktype(" + strconv.Itoa(int(t)) + ")"
}

// Valid reports whether the application may acknowledge a record with t: Accept, Release,
// Reject or Renew. Gap is not valid.
func (t Type) Valid() bool { return t >= Accept && t <= Renew }

// Final reports whether t ends the record's delivery: Accept, Release, Reject and Gap do; Renew
// does not (the record stays acquired and must be acknowledged again). Invalid values are not
// final.
func (t Type) Final() bool { return t >= Gap && t <= Reject }

// Parse returns the type named s, in any case ("accept", "RELEASE", "Renew"). "gap" and unknown
// names are an error.
func Parse(s string) (Type, error) {
	for t := Accept; t <= Renew; t++ {
		if strings.EqualFold(s, names[t]) {
			return t, nil
		}
	}
	return 0, fmt.Errorf("Unknown acknowledge type %q: use accept, release, reject or renew", s)
}

// FromID returns the type whose wire id is id, 1 to 4. Any other id, including Gap's 0, is an
// error worded as Kafka's: "Unknown acknowledge type id: 7".
func FromID(id int8) (Type, error) {
	if t := Type(id); t.Valid() {
		return t, nil
	}
	return 0, fmt.Errorf("Unknown acknowledge type id: %d", id)
}
