package group

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// ListGroups returns the groups ListGroups reports, sorted by id, filtered as Kafka's
// GroupMetadataManager.listGroups does: states compared case-insensitively after trimming,
// types parsed case-insensitively (a name that is no type matches no group, without error);
// an empty filter matches all, and both filters must match. After Close it is
// COORDINATOR_NOT_AVAILABLE.
func (c *Coordinator) ListGroups(states, types []string) ([]Listing, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, kerr.CoordinatorNotAvailable
	}
	wantStates := map[string]bool{}
	for _, s := range states {
		wantStates[strings.ToLower(strings.TrimSpace(s))] = true
	}
	wantTypes := map[Type]bool{}
	for _, s := range types {
		if t, ok := ParseType(s); ok {
			wantTypes[t] = true
		}
	}
	var out []Listing
	for _, l := range c.Groups() {
		if len(states) > 0 && !wantStates[strings.ToLower(l.State)] {
			continue
		}
		if len(types) > 0 && !wantTypes[l.Type] {
			continue
		}
		out = append(out, l)
	}
	return out, nil
}

// DeleteGroups deletes groups as Kafka's DeleteGroups does, one error per id (nil for a
// deleted group): COORDINATOR_NOT_AVAILABLE after Close, GROUP_ID_NOT_FOUND "Group <id> not
// found." for a missing group, NON_EMPTY_GROUP for a group with members, of whatever type.
// Deleting a group stops its timers and drops its committed offsets.
func (c *Coordinator) DeleteGroups(ids []string) []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	errs := make([]error, len(ids))
	for i, id := range ids {
		if c.closed {
			errs[i] = kerr.CoordinatorNotAvailable
			continue
		}
		g := c.groups[id]
		switch {
		case g == nil:
			errs[i] = kafkaerr.New(kerr.GroupIDNotFound, "Group %s not found.", id)
		case g.kind.memberCount() > 0:
			errs[i] = kerr.NonEmptyGroup
		default:
			g.kind.stop()
			delete(c.groups, id)
		}
	}
	return errs
}
