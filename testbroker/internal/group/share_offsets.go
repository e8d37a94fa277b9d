package group

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// errShareGroupNotEmpty is Kafka's refusal to alter or delete the offsets of a share group that
// has members: NON_EMPTY_GROUP with the code's own description as its message.
var errShareGroupNotEmpty = &kafkaerr.Error{Code: kerr.NonEmptyGroup, Message: "The group is not empty."}

// AlterShareGroupOffsets checks a share group as Kafka's GroupMetadataManager.alterShareGroupOffsets
// does before the share-partition start offsets are set, and calls apply, which sets them, while
// no member can join. A group of another type is GROUP_ID_NOT_FOUND "Group <id> is not a share
// group.", a group with members NON_EMPTY_GROUP "The group is not empty.". A missing group is
// created, empty, when create is set: Kafka materializes it when the request names a topic that
// exists; otherwise apply runs without a group. After Close it is COORDINATOR_NOT_AVAILABLE.
// apply must not call back into the Coordinator.
func (c *Coordinator) AlterShareGroupOffsets(id string, create bool, apply func()) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return kerr.CoordinatorNotAvailable
	}
	g := c.groups[id]
	switch {
	case g == nil && create:
		s := newShareGroup()
		g = &Group{id: strings.Clone(id), typ: TypeShare, kind: s, share: s}
		c.groups[g.id] = g
	case g == nil:
	case g.typ != TypeShare:
		return notTypeError(id, TypeShare)
	case len(g.share.members) > 0:
		return errShareGroupNotEmpty
	}
	apply()
	return nil
}

// DeleteShareGroupOffsets checks a share group as Kafka's GroupCoordinatorShard.initiateDeleteShareGroupOffsets
// does before share state is deleted, and calls apply, which deletes it, while no member can
// join. A missing group is GROUP_ID_NOT_FOUND "Group <id> not found.", a group of another type
// GROUP_ID_NOT_FOUND "Group <id> is not a share group.", a group with members NON_EMPTY_GROUP
// "The group is not empty.". After Close it is COORDINATOR_NOT_AVAILABLE. apply must not call
// back into the Coordinator.
func (c *Coordinator) DeleteShareGroupOffsets(id string, apply func()) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return kerr.CoordinatorNotAvailable
	}
	s, err := c.shareGroupLocked(id)
	if err != nil {
		return err
	}
	if len(s.members) > 0 {
		return errShareGroupNotEmpty
	}
	apply()
	return nil
}
